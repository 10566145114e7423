// Running CUDA kernels: the device plait uses, device code built by NVRTC
// (through the disk cache), loaded modules, the plait_cuda_api table the host
// part of a kernel calls, and device memory for the Python layer.
//
// plait uses one CUDA context per process: the context current on the thread
// that first needs CUDA, else the primary context of device 0 (the one
// PyTorch and CuPy use for device 0). Every entry point makes it current for
// its duration and restores the caller's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "jit/compiled_kernel.h"
#include "runtime/abi.h"
#include "support/compile_options.h"

namespace plait::jit {

// "" when CUDA kernels can be compiled and run here; otherwise what is
// missing (driver, GPU, NVRTC), as a sentence for the user.
std::string cuda_unavailable_reason();

struct CudaDeviceInfo {
  int ordinal = 0;
  int arch = 0;  // compute capability as major * 10 + minor: 90 on Hopper
  int multiprocessors = 0;
  std::string name;
};

// The device plait uses. Throws InternalError when CUDA is unavailable.
CudaDeviceInfo cuda_device();

// A module loaded into plait's context, with its kernels looked up by the
// names the code generator gave them.
class CudaModule {
 public:
  ~CudaModule();
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;
  void* function(int index) const { return functions_.at(static_cast<size_t>(index)); }
  const std::string& name(int index) const { return names_.at(static_cast<size_t>(index)); }
  size_t size() const { return functions_.size(); }
  // The most blocks of `block` threads of kernel `index` that fit on the GPU
  // at once (a cooperative launch's largest grid); 0 when the GPU cannot
  // launch cooperative kernels. Computed once per kernel and block size.
  uint32_t cooperative_grid(int index, uint32_t block) const;
  // The most blocks of `block` threads of kernel `index` resident at once (0: not known).
  uint32_t resident_grid(int index, uint32_t block) const;
  // Whether kernel `index` may be launched with `bytes` of dynamic shared
  // memory: up to 48 KiB always, beyond that up to the device's opt-in
  // limit once the kernel's attribute is raised (remembered per kernel).
  bool allow_shared_bytes(int index, uint64_t bytes) const;

 private:
  friend std::shared_ptr<CudaModule> load_cuda_module(const std::string& cubin, const std::string& ptx,
                                                      const std::vector<std::string>& names);
  CudaModule() = default;
  void* module_ = nullptr;
  std::vector<void*> functions_;
  std::vector<std::string> names_;
  mutable std::mutex facts_mutex_;  // guards the two maps below, each filled once per kernel
  mutable std::map<std::pair<int, uint32_t>, uint32_t> resident_grids_;
  mutable std::map<int, uint64_t> shared_bytes_allowed_;
};

struct DeviceBuild {
  std::string ptx;
  std::string cubin;
  std::string arch;  // "sm_90"
  std::string nvrtc_version;
  std::string cache_entry;  // the disk cache entry, or "" (cache off)
  bool from_disk_cache = false;
  std::string log;  // NVRTC's messages (its warnings) when compile_device_code compiled it
};

// Compiles device source with NVRTC for the current device (sm_90 on
// Hopper), or finds the result in the disk cache, keyed by the Plait
// version, the source, the architecture, the NVRTC version and the flags.
DeviceBuild build_device_code(const std::string& device_source, const CompileOptions& options);

// Compiles device source with NVRTC for `arch` (no GPU needed): the PTX, and
// the CUBIN unless `virtual_arch`. For tests and plaitc --emit ptx.
DeviceBuild compile_device_code(const std::string& device_source, int arch, bool virtual_arch,
                                const CompileOptions& options);

// Loads the CUBIN (or, when the driver refuses it, the PTX) into plait's
// context. Throws InternalError naming the driver's error.
std::shared_ptr<CudaModule> load_cuda_module(const std::string& cubin, const std::string& ptx,
                                             const std::vector<std::string>& names);

// Calls a kernel compiled for Target::CUDA: its array arguments point to
// device memory; work goes to `stream` (0: the legacy default stream).
// Fills ctx->cuda for the call, runs the entry point and, when the kernel's
// device code can raise errors, waits for the stream and turns the device
// error record into ctx's error. Returns the error kind (0: ok).
int32_t call_cuda_kernel(const CompiledKernel& kernel, void** args, plait_result* results, plait_context* ctx,
                         uintptr_t stream);

// Device memory for the Python layer. Each throws InternalError naming the
// driver's error; copies wait for `stream` to finish them.
uintptr_t device_alloc(size_t bytes);
void device_free(uintptr_t pointer);
void copy_host_to_device(uintptr_t dst, const void* src, size_t bytes, uintptr_t stream);
void copy_device_to_host(void* dst, uintptr_t src, size_t bytes, uintptr_t stream);
void copy_device_to_device(uintptr_t dst, uintptr_t src, size_t bytes, uintptr_t stream);
void synchronize(uintptr_t stream);

// Launches kernel `index` of `module` on `stream`: grid_x by grid_y blocks of
// `block` threads with `shared_bytes` of dynamic shared memory. Throws
// InternalError naming the driver's error.
void launch_kernel(const CudaModule& module, int index, uint32_t grid_x, uint32_t grid_y, uint32_t block,
                   uint32_t shared_bytes, void** params, uintptr_t stream);

}  // namespace plait::jit
