// The CUDA runtime of plait: context, device code builds and their disk
// cache, module loading, the per-call plait_cuda_api, device memory.
#include "jit/cuda_runtime.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "jit/cuda_call.h"
#include "jit/cuda_driver.h"
#include "jit/disk_cache.h"
#include "jit/sha256.h"
#include "runtime/device_errors.h"
#include "support/diagnostics.h"
#include "support/version.h"

namespace plait::jit {
namespace fs = std::filesystem;
using namespace cuda;
using namespace cuda_call;

namespace {

// The process's runtime, or null with the reason in `why`.
Runtime* runtime(std::string* why) {
  static Runtime rt;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    rt.d = driver(&failure);
    if (!rt.d) return;
    const DriverApi& d = *rt.d;
    CUcontext current = nullptr;
    CUdevice device = 0;
    CUresult result = d.cuCtxGetCurrent(&current);
    if (result == 0 && current != nullptr) {
      result = d.cuCtxGetDevice(&device);
    } else {
      result = d.cuDeviceGet(&device, 0);
      if (result == 0) result = d.cuDevicePrimaryCtxRetain(&current, device);
    }
    if (result != 0 || current == nullptr) {
      failure = "cannot set up a CUDA context: " + error_text(result);
      rt.d = nullptr;
      return;
    }
    rt.context = current;
    rt.device.ordinal = device;
    int major = 0, minor = 0;
    constexpr int kComputeCapabilityMajor = 75, kComputeCapabilityMinor = 76, kMultiprocessorCount = 16,
                  kCooperativeLaunch = 95, kSharedBytesOptin = 97, kL2CacheSize = 38;
    int cooperative = 0;
    if (d.cuDeviceGetAttribute(&cooperative, kCooperativeLaunch, device) == 0) rt.cooperative_launch = cooperative != 0;
    if (d.cuDeviceGetAttribute(&rt.shared_bytes_optin, kSharedBytesOptin, device) != 0) rt.shared_bytes_optin = 0;
    if (d.cuDeviceGetAttribute(&rt.l2_bytes, kL2CacheSize, device) != 0) rt.l2_bytes = 0;
    d.cuDeviceGetAttribute(&major, kComputeCapabilityMajor, device);
    d.cuDeviceGetAttribute(&minor, kComputeCapabilityMinor, device);
    d.cuDeviceGetAttribute(&rt.device.multiprocessors, kMultiprocessorCount, device);
    rt.device.arch = major * 10 + minor;
    char name[256] = {};
    if (d.cuDeviceGetName(name, sizeof name - 1, device) == 0) rt.device.name = name;
    constexpr int kMemoryPoolsSupported = 115, kReleaseThreshold = 4;  // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
    int pools = 0;
    void* pool = nullptr;
    uint64_t keep_all = UINT64_MAX;
    rt.ordered_allocation = d.cuMemAllocAsync && d.cuMemFreeAsync && d.cuDeviceGetDefaultMemPool &&
                            d.cuMemPoolSetAttribute && d.cuDeviceGetAttribute(&pools, kMemoryPoolsSupported, device) == 0 &&
                            pools != 0 && d.cuDeviceGetDefaultMemPool(&pool, device) == 0 &&
                            d.cuMemPoolSetAttribute(pool, kReleaseThreshold, &keep_all) == 0;
  });
  if (!rt.d && why) *why = failure;
  return rt.d ? &rt : nullptr;
}

Runtime& require_runtime() {
  std::string why;
  Runtime* rt = runtime(&why);
  if (!rt) PLAIT_INTERNAL_ERROR("CUDA is not available: " + why);
  return *rt;
}

// Makes plait's context current on this thread for the guard's lifetime.
class ContextGuard {
 public:
  explicit ContextGuard(const Runtime& rt) : d_(*rt.d) {
    d_.cuCtxGetCurrent(&previous_);
    if (previous_ != rt.context) {
      d_.cuCtxSetCurrent(rt.context);
      switched_ = true;
    }
  }
  ~ContextGuard() {
    if (switched_) d_.cuCtxSetCurrent(previous_);
  }
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;

 private:
  const DriverApi& d_;
  CUcontext previous_ = nullptr;
  bool switched_ = false;
};

void check(CUresult result, const char* what) {
  if (result != 0) PLAIT_INTERNAL_ERROR(std::string(what) + " failed: " + error_text(result));
}

// ---------------------------------------------------------------- disk cache

constexpr const char* kCubinName = "kernel.cubin";
constexpr const char* kPtxName = "kernel.ptx";
constexpr const char* kDeviceSourceName = "kernel.cu";
constexpr const char* kChecksumName = "kernel.sha256";

std::string read_binary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_binary(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  out.close();
  if (!out) PLAIT_INTERNAL_ERROR("cannot write '" + path + "'");
}

// The checksum file covers the CUBIN and the PTX.
std::string build_checksum(const std::string& cubin, const std::string& ptx) {
  return sha256_hex(sha256_hex(cubin) + sha256_hex(ptx));
}

bool load_entry(const std::string& entry, DeviceBuild* build) {
  std::string recorded = read_binary(entry + "/" + kChecksumName);
  if (recorded.size() < 64) return false;
  recorded.resize(64);
  std::string cubin = read_binary(entry + "/" + kCubinName);
  std::string ptx = read_binary(entry + "/" + kPtxName);
  if ((cubin.empty() && ptx.empty()) || build_checksum(cubin, ptx) != recorded) return false;
  build->cubin = std::move(cubin);
  build->ptx = std::move(ptx);
  return true;
}

std::vector<std::string> nvrtc_options(const CompileOptions& options) {
  // Without fastmath, no multiply-add contraction: results match NumPy's
  // (and the CPU target's) rounding for + - * /.
  std::vector<std::string> flags = {"--std=c++17", "-lineinfo"};
  flags.push_back(options.fastmath ? "--use_fast_math" : "--fmad=false");
  return flags;
}

// The architecture to compile for: the device's own when NVRTC knows it,
// else the newest NVRTC knows below it (loaded as PTX, the driver compiles).
int compile_arch(int device_arch, bool* virtual_arch) {
  std::vector<int> supported = nvrtc_supported_archs();
  *virtual_arch = false;
  bool known = false;
  int best = 0;
  for (int a : supported) {
    if (a == device_arch) known = true;
    if (a <= device_arch && a > best) best = a;
  }
  if (known || supported.empty()) return device_arch;
  *virtual_arch = true;
  return best > 0 ? best : device_arch;
}

// ---------------------------------------------------------------- the api table

// The call this thread is making, for api_free: arrays freed during a call
// (its temporaries) go back to the pool in the order of the call's stream.
thread_local const CallState* current_call = nullptr;

}  // namespace

void cuda_call::record_error(plait_context* ctx, int32_t kind, const std::string& message) {
  if (ctx->error_kind != PLAIT_OK) return;
  ctx->error_kind = kind;
  ctx->error_line = 0;
  ctx->error_col = 0;
  std::snprintf(ctx->error_message, sizeof ctx->error_message, "%s", message.c_str());
}

namespace {

// With PLAIT_CUDA_LOG_LAUNCHES set (not "0"), each launch is written to
// standard error: which version of a kernel the host picked, and its shape.
// Read at each launch (a getenv costs far less than the launch), so that a
// process can turn it on and off.
bool log_launches() {
  const char* v = std::getenv("PLAIT_CUDA_LOG_LAUNCHES");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

void note_launch(CallState& s, int32_t kernel) {
  const auto index = static_cast<size_t>(kernel);
  if (s.kernel_raises && (index >= s.kernel_raises->size() || (*s.kernel_raises)[index])) s.raising_launched = true;
}

void log_launch(const CallState& s, int32_t kernel, uint32_t grid, uint32_t block, uint64_t shared_bytes) {
  if (!log_launches()) return;
  std::fprintf(stderr, "plait: launch %s grid %u block %u shared %llu\n", s.module->name(kernel).c_str(), grid, block,
               static_cast<unsigned long long>(shared_bytes));
}

// Launches refuse once the call has recorded an error (one that a copy from
// the GPU reported from device code, say): the host part, which tests every
// launch, then ends the call there.
int32_t api_launch(plait_context* ctx, int32_t kernel, uint32_t grid, uint32_t block, void** params) {
  if (ctx->error_kind != PLAIT_OK) return 1;
  CallState& s = state_of(ctx);
  note_launch(s, kernel);
  log_launch(s, kernel, grid, block, 0);
  CUresult r = s.rt->d->cuLaunchKernel(s.module->function(kernel), grid, 1, 1, block, 1, 1, 0, s.stream, params,
                                       nullptr);
  if (r == 0) return 0;
  record_error(ctx, PLAIT_RUNTIME_ERROR, "launching a CUDA kernel failed: " + error_text(r));
  return 1;
}

int32_t api_launch_shared(plait_context* ctx, int32_t kernel, uint32_t grid, uint32_t block, uint64_t shared_bytes,
                          void** params) {
  if (ctx->error_kind != PLAIT_OK) return -1;
  CallState& s = state_of(ctx);
  if (!s.module->allow_shared_bytes(kernel, shared_bytes)) return 1;
  note_launch(s, kernel);
  log_launch(s, kernel, grid, block, shared_bytes);
  CUresult r = s.rt->d->cuLaunchKernel(s.module->function(kernel), grid, 1, 1, block, 1, 1,
                                       static_cast<unsigned>(shared_bytes), s.stream, params, nullptr);
  if (r == 0) return 0;
  record_error(ctx, PLAIT_RUNTIME_ERROR, "launching a CUDA kernel failed: " + error_text(r));
  return -1;
}

uint32_t api_cooperative_grid(plait_context* ctx, int32_t kernel, uint32_t block) {
  return state_of(ctx).module->cooperative_grid(kernel, block);
}

uint32_t api_resident_grid(plait_context* ctx, int32_t kernel, uint32_t block) {
  return state_of(ctx).module->resident_grid(kernel, block);
}

int32_t api_launch_cooperative(plait_context* ctx, int32_t kernel, uint32_t grid, uint32_t block, void** params) {
  if (ctx->error_kind != PLAIT_OK) return 1;
  CallState& s = state_of(ctx);
  note_launch(s, kernel);
  log_launch(s, kernel, grid, block, 0);
  CUresult r = s.rt->d->cuLaunchCooperativeKernel(s.module->function(kernel), grid, 1, 1, block, 1, 1, 0, s.stream,
                                                  params);
  if (r == 0) return 0;
  record_error(ctx, PLAIT_RUNTIME_ERROR, "launching a cooperative CUDA kernel failed: " + error_text(r));
  return 1;
}

// The bytes to allocate for an array of `bytes`: whole 32-bit words. An
// 8- or 16-bit element's atomic update is a compare-and-swap of the aligned
// word that holds it (device runtime, atomic_combine), which for the last
// elements of an array may reach past its end; allocations start aligned,
// so with whole words that word stays inside the allocation (memcheck
// reported the reads past a 17-byte uint8 histogram).
uint64_t whole_words(uint64_t bytes) {
  return (bytes + 3) / 4 * 4;
}

void* api_alloc(plait_context* ctx, uint64_t bytes) {
  CallState& s = state_of(ctx);
  CUdeviceptr pointer = 0;
  CUresult r = s.rt->ordered_allocation ? s.rt->d->cuMemAllocAsync(&pointer, whole_words(bytes), s.stream)
                                        : s.rt->d->cuMemAlloc(&pointer, whole_words(bytes));
  if (r == 0) return reinterpret_cast<void*>(static_cast<uintptr_t>(pointer));
  record_error(ctx, PLAIT_MEMORY_ERROR,
         "Unable to allocate " + std::to_string(bytes) + " bytes of GPU memory (" + error_text(r) + ")");
  return nullptr;
}

// Called when the last reference to an array goes: during the call for its
// temporaries (freed in stream order, without waiting), or for a returned
// array possibly long after the call and from another thread (cuMemFree,
// which waits for the GPU, as the array may have been used on any stream).
void api_free(void* pointer) {
  std::string why;
  Runtime* rt = runtime(&why);
  if (!rt || pointer == nullptr) return;
  ContextGuard guard(*rt);
  const CUdeviceptr p = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(pointer));
  if (current_call && rt->ordered_allocation) {
    rt->d->cuMemFreeAsync(p, current_call->stream);
  } else {
    rt->d->cuMemFree(p);
  }
}

int32_t api_copy_to_device(plait_context* ctx, void* dst, const void* src, uint64_t bytes) {
  CallState& s = state_of(ctx);
  CUresult r = s.rt->d->cuMemcpyHtoDAsync(static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(dst)), src, bytes,
                                          s.stream);
  if (r == 0) return 0;
  record_error(ctx, PLAIT_RUNTIME_ERROR, "copying to the GPU failed: " + error_text(r));
  return 1;
}

// The error of a device error record copied to the host, into ctx. It
// replaces an error the host recorded: launches stop once the host records
// one, so the kernel that failed was launched, and failed, before it (the
// host runs ahead of the stream), and the first error of the call wins.
void take_device_error(plait_context* ctx, const runtime::DeviceErrorRecord& record,
                       const std::vector<std::string>& assert_messages) {
  if (record.kind == PLAIT_OK) return;
  ctx->error_kind = record.kind;
  ctx->error_line = record.line;
  ctx->error_col = record.col;
  std::snprintf(ctx->error_message, sizeof ctx->error_message, "%s",
                runtime::device_error_message(record, assert_messages).c_str());
}

int32_t api_copy_to_host(plait_context* ctx, void* dst, const void* src, uint64_t bytes) {
  CallState& s = state_of(ctx);
  CUresult r = s.rt->d->cuMemcpyDtoHAsync(dst, static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(src)), bytes,
                                          s.stream);
  if (r == 0 && s.record) r = s.rt->d->cuMemcpyDtoHAsync(s.record, s.record_device, sizeof *s.record, s.stream);
  if (r == 0) r = s.rt->d->cuStreamSynchronize(s.stream);
  if (r == 0 && s.record && s.record->kind != PLAIT_OK) {
    take_device_error(ctx, *s.record, *s.assert_messages);
    return 1;
  }
  if (r == 0) return 0;
  record_error(ctx, PLAIT_RUNTIME_ERROR, "copying from the GPU failed (or a kernel failed before): " + error_text(r));
  return 1;
}

int32_t api_zero(plait_context* ctx, void* dst, uint64_t bytes) {
  CallState& s = state_of(ctx);
  CUresult r =
      s.rt->d->cuMemsetD8Async(static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(dst)), 0, bytes, s.stream);
  if (r == 0) return 0;
  record_error(ctx, PLAIT_RUNTIME_ERROR, "clearing GPU memory failed: " + error_text(r));
  return 1;
}

// A scratch buffer of the pool of `stream`, returned to it when the call
// ends (its kernels may still run then: see Runtime::scratch_pool).
class Scratch {
 public:
  Scratch(Runtime& rt, CUstream stream) : rt_(rt), stream_(stream) {
    {
      std::lock_guard<std::mutex> lock(rt_.scratch_mutex);
      std::vector<ScratchBuffer>& free = rt_.scratch_pool[stream_];
      if (!free.empty()) {
        buffer_ = free.back();
        free.pop_back();
        return;
      }
    }
    check(rt_.d->cuMemAlloc(&buffer_.device, PLAIT_CUDA_SCRATCH_BYTES), "allocating the scratch buffer");
    check(rt_.d->cuMemsetD8Async(buffer_.device, 0, PLAIT_CUDA_ERROR_BYTES, stream_), "clearing the device error record");
    void* host = nullptr;
    check(rt_.d->cuMemAllocHost(&host, sizeof(runtime::DeviceErrorRecord)), "allocating page-locked memory");
    buffer_.record = static_cast<runtime::DeviceErrorRecord*>(host);
  }
  ~Scratch() {
    std::lock_guard<std::mutex> lock(rt_.scratch_mutex);
    rt_.scratch_pool[stream_].push_back(buffer_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  CUdeviceptr pointer() const { return buffer_.device; }
  runtime::DeviceErrorRecord* record() const { return buffer_.record; }

 private:
  Runtime& rt_;
  CUstream stream_;
  ScratchBuffer buffer_;
};

}  // namespace

std::string cuda_unavailable_reason() {
  std::string why;
  if (!runtime(&why)) return why;
  if (!nvrtc(&why)) return why;
  return "";
}

CudaDeviceInfo cuda_device() { return require_runtime().device; }

CudaModule::~CudaModule() {
  std::string why;
  Runtime* rt = runtime(&why);
  if (rt && module_) {
    ContextGuard guard(*rt);
    rt->d->cuModuleUnload(module_);
  }
}

uint32_t CudaModule::cooperative_grid(int index, uint32_t block) const {
  return require_runtime().cooperative_launch ? resident_grid(index, block) : 0;
}

uint32_t CudaModule::resident_grid(int index, uint32_t block) const {
  std::lock_guard<std::mutex> lock(facts_mutex_);
  auto it = resident_grids_.find({index, block});
  if (it != resident_grids_.end()) return it->second;
  Runtime& rt = require_runtime();
  uint32_t grid = 0;
  int per_multiprocessor = 0;
  if (rt.d->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, function(index), static_cast<int>(block),
                                                        0) == 0 &&
      per_multiprocessor > 0) {
    grid = static_cast<uint32_t>(per_multiprocessor) * static_cast<uint32_t>(rt.device.multiprocessors);
  }
  resident_grids_[{index, block}] = grid;
  return grid;
}

bool CudaModule::allow_shared_bytes(int index, uint64_t bytes) const {
  constexpr uint64_t kWithoutOptin = 48 * 1024;  // dynamic shared memory any kernel may take
  if (bytes <= kWithoutOptin) return true;
  std::lock_guard<std::mutex> lock(facts_mutex_);
  auto it = shared_bytes_allowed_.find(index);
  if (it != shared_bytes_allowed_.end() && it->second >= bytes) return true;
  Runtime& rt = require_runtime();
  constexpr int kMaxDynamicSharedBytes = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  if (!rt.d->cuFuncSetAttribute || bytes > static_cast<uint64_t>(rt.shared_bytes_optin) ||
      rt.d->cuFuncSetAttribute(function(index), kMaxDynamicSharedBytes, static_cast<int>(bytes)) != 0)
    return false;
  shared_bytes_allowed_[index] = bytes;
  return true;
}

DeviceBuild compile_device_code(const std::string& device_source, int arch, bool virtual_arch,
                                const CompileOptions& options) {
  NvrtcOutput out = nvrtc_compile(device_source, "kernel.cu", arch, virtual_arch, nvrtc_options(options));
  DeviceBuild build;
  build.ptx = std::move(out.ptx);
  build.cubin = std::move(out.cubin);
  build.arch = (virtual_arch ? "compute_" : "sm_") + std::to_string(arch);
  build.nvrtc_version = nvrtc_version();
  build.log = std::move(out.log);
  return build;
}

DeviceBuild build_device_code(const std::string& device_source, const CompileOptions& options) {
  Runtime& rt = require_runtime();
  bool virtual_arch = false;
  const int arch = compile_arch(rt.device.arch, &virtual_arch);
  const std::string arch_name = (virtual_arch ? "compute_" : "sm_") + std::to_string(arch);
  const std::string version = nvrtc_version();
  if (!options.disk_cache) return compile_device_code(device_source, arch, virtual_arch, options);

  DiskCache cache(default_cache_directory(options));
  Sha256 hasher;
  auto add = [&hasher](const std::string& part) {
    hasher.update(std::to_string(part.size()) + ":");
    hasher.update(part);
  };
  add("plait-cuda-device-cache-v1");
  add(compiler_version());
  add(arch_name);
  add(version);
  for (const std::string& flag : nvrtc_options(options)) add(flag);
  add(device_source);
  const std::string key = hasher.hex_digest();
  const std::string entry = cache.entry_path(key);

  DeviceBuild build;
  if (load_entry(entry, &build)) {
    build.arch = arch_name;
    build.nvrtc_version = version;
    build.cache_entry = entry;
    build.from_disk_cache = true;
    return build;
  }
  build = compile_device_code(device_source, arch, virtual_arch, options);
  // Publish with one rename of a complete directory, as DiskCache does.
  const std::string shard = cache.directory() + "/" + key.substr(0, 2);
  if (::mkdir(shard.c_str(), 0700) != 0 && errno != EEXIST)
    PLAIT_INTERNAL_ERROR("cannot create '" + shard + "': " + std::strerror(errno));
  std::string staging = cache.directory() + "/build-" + key.substr(0, 12) + "-XXXXXX";
  if (!::mkdtemp(staging.data())) PLAIT_INTERNAL_ERROR("cannot create a directory in '" + cache.directory() + "'");
  write_binary(staging + "/" + kDeviceSourceName, device_source);
  write_binary(staging + "/" + kPtxName, build.ptx);
  write_binary(staging + "/" + kCubinName, build.cubin);
  write_binary(staging + "/" + kChecksumName, build_checksum(build.cubin, build.ptx) + "\n");
  if (::rename(staging.c_str(), entry.c_str()) != 0) {
    // Another process published it first (or an old damaged entry is in
    // the way): ours is equivalent, keep using it from memory.
    std::error_code ignored;
    fs::remove_all(staging, ignored);
  }
  build.cache_entry = entry;
  return build;
}

std::shared_ptr<CudaModule> load_cuda_module(const std::string& cubin, const std::string& ptx,
                                             const std::vector<std::string>& names) {
  Runtime& rt = require_runtime();
  ContextGuard guard(rt);
  std::shared_ptr<CudaModule> module(new CudaModule());
  CUresult result = -1;
  if (!cubin.empty()) result = rt.d->cuModuleLoadData(&module->module_, cubin.data());
  if (result != 0 && !ptx.empty()) {
    // A driver older than NVRTC may refuse the CUBIN but compile the PTX.
    CUresult from_ptx = rt.d->cuModuleLoadData(&module->module_, ptx.c_str());
    if (from_ptx != 0) {
      PLAIT_INTERNAL_ERROR("the CUDA driver cannot load the compiled kernel: " + error_text(from_ptx) +
                           (cubin.empty() ? "" : " (and the CUBIN: " + error_text(result) + ")"));
    }
    result = 0;
  }
  if (result != 0) PLAIT_INTERNAL_ERROR("the CUDA driver cannot load the compiled kernel: " + error_text(result));
  for (const std::string& name : names) {
    CUfunction function = nullptr;
    check(rt.d->cuModuleGetFunction(&function, module->module_, name.c_str()), ("finding kernel " + name).c_str());
    module->functions_.push_back(function);
    module->names_.push_back(name);
  }
  return module;
}

int32_t call_cuda_kernel(const CompiledKernel& kernel, void** args, plait_result* results, plait_context* ctx,
                         uintptr_t stream) {
  Runtime& rt = require_runtime();
  if (!kernel.cuda_module) PLAIT_INTERNAL_ERROR("kernel `" + kernel.name + "` has no CUDA module");
  ContextGuard guard(rt);
  Scratch scratch(rt, reinterpret_cast<CUstream>(stream));
  CallState state{&rt, kernel.cuda_module.get(), reinterpret_cast<CUstream>(stream)};
  if (kernel.device_errors) {
    state.record_device = scratch.pointer();
    state.record = scratch.record();
    state.assert_messages = &kernel.device_assert_messages;
    state.kernel_raises = &kernel.device_kernel_raises;
  }
  plait_cuda_api api{};
  api.state = &state;
  api.launch = &api_launch;
  api.alloc = &api_alloc;
  api.free = &api_free;
  api.copy_to_device = &api_copy_to_device;
  api.copy_to_host = &api_copy_to_host;
  api.zero = &api_zero;
  api.cooperative_grid = &api_cooperative_grid;
  api.launch_cooperative = &api_launch_cooperative;
  api.launch_shared = &api_launch_shared;
  api.shared_bytes_limit = rt.d->cuFuncSetAttribute ? static_cast<uint64_t>(rt.shared_bytes_optin) : 0;
  api.gemm = &api_gemm;
  api.gemmt = &api_gemmt;
  api.trmm = &api_trmm;
  api.symm = &api_symm;
  api.trsv = &api_trsv;
  api.resident_grid = &api_resident_grid;
  api.l2_bytes = static_cast<uint64_t>(rt.l2_bytes);
  api.scratch = reinterpret_cast<void*>(static_cast<uintptr_t>(scratch.pointer()));
  ctx->cuda = &api;
  struct Detach {
    plait_context* ctx;
    const CallState* outer;
    ~Detach() {
      ctx->cuda = nullptr;
      current_call = outer;
    }
  } detach{ctx, current_call};
  current_call = &state;

  const int32_t status = kernel.entry(args, results, ctx);
  if (!kernel.device_errors || !state.raising_launched) return status;
  // The device error record, once the stream has run everything the call
  // queued; cleared again in stream order when it holds an error.
  runtime::DeviceErrorRecord& record = *scratch.record();
  CUresult r = rt.d->cuMemcpyDtoHAsync(&record, scratch.pointer(), sizeof record, state.stream);
  if (r == 0) r = rt.d->cuStreamSynchronize(state.stream);
  if (r == 0 && record.kind != PLAIT_OK)
    r = rt.d->cuMemsetD8Async(scratch.pointer(), 0, PLAIT_CUDA_ERROR_BYTES, state.stream);
  if (r != 0) {
    record_error(ctx, PLAIT_RUNTIME_ERROR, "a CUDA kernel failed: " + error_text(r));
  } else {
    take_device_error(ctx, record, kernel.device_assert_messages);
  }
  return ctx->error_kind;
}

uintptr_t device_alloc(size_t bytes) {
  Runtime& rt = require_runtime();
  ContextGuard guard(rt);
  CUdeviceptr pointer = 0;
  CUresult r = rt.d->cuMemAlloc(&pointer, bytes == 0 ? 256 : whole_words(bytes));
  if (r != 0) PLAIT_INTERNAL_ERROR("allocating " + std::to_string(bytes) + " bytes of GPU memory failed: " + error_text(r));
  return static_cast<uintptr_t>(pointer);
}

void device_free(uintptr_t pointer) { api_free(reinterpret_cast<void*>(pointer)); }

void copy_host_to_device(uintptr_t dst, const void* src, size_t bytes, uintptr_t stream) {
  if (bytes == 0) return;
  Runtime& rt = require_runtime();
  ContextGuard guard(rt);
  check(rt.d->cuMemcpyHtoDAsync(dst, src, bytes, reinterpret_cast<CUstream>(stream)), "copying to the GPU");
  check(rt.d->cuStreamSynchronize(reinterpret_cast<CUstream>(stream)), "waiting for the copy to the GPU");
}

void copy_device_to_host(void* dst, uintptr_t src, size_t bytes, uintptr_t stream) {
  if (bytes == 0) return;
  Runtime& rt = require_runtime();
  ContextGuard guard(rt);
  check(rt.d->cuMemcpyDtoHAsync(dst, src, bytes, reinterpret_cast<CUstream>(stream)), "copying from the GPU");
  check(rt.d->cuStreamSynchronize(reinterpret_cast<CUstream>(stream)), "waiting for the copy from the GPU");
}

void copy_device_to_device(uintptr_t dst, uintptr_t src, size_t bytes, uintptr_t stream) {
  if (bytes == 0) return;
  Runtime& rt = require_runtime();
  ContextGuard guard(rt);
  check(rt.d->cuMemcpyDtoDAsync(dst, src, bytes, reinterpret_cast<CUstream>(stream)), "copying on the GPU");
}

void launch_kernel(const CudaModule& module, int index, uint32_t grid_x, uint32_t grid_y, uint32_t block,
                   uint32_t shared_bytes, void** params, uintptr_t stream) {
  Runtime& rt = require_runtime();
  ContextGuard guard(rt);
  if (!module.allow_shared_bytes(index, shared_bytes))
    PLAIT_INTERNAL_ERROR("kernel " + module.name(index) + " cannot have " + std::to_string(shared_bytes) +
                         " bytes of shared memory on this GPU");
  check(rt.d->cuLaunchKernel(module.function(index), grid_x, grid_y, 1, block, 1, 1, shared_bytes,
                             reinterpret_cast<CUstream>(stream), params, nullptr),
        "launching a CUDA kernel");
}

void synchronize(uintptr_t stream) {
  Runtime& rt = require_runtime();
  ContextGuard guard(rt);
  check(rt.d->cuStreamSynchronize(reinterpret_cast<CUstream>(stream)), "waiting for the GPU");
}

}  // namespace plait::jit
