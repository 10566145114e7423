// Loading libcuda and libnvrtc with dlopen, and NVRTC compilation.
#include "jit/cuda_driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "support/diagnostics.h"

namespace plait::jit::cuda {
namespace {

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

// Opens the first library of `candidates` that loads; `tried` collects the
// dlerror() text of each failure.
void* open_first(const std::vector<std::string>& candidates, std::string* tried) {
  for (const std::string& name : candidates) {
    if (name.empty()) continue;
    // RTLD_NODELETE: kernels and cached modules may outlive any handle we keep.
    void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle) return handle;
    const char* error = ::dlerror();
    *tried += "\n  " + (error ? std::string(error) : name);
  }
  return nullptr;
}

// Looks up every symbol; `missing` lists those not found.
template <typename F>
void bind(void* handle, F& slot, const char* symbol, std::string* missing) {
  slot = reinterpret_cast<F>(::dlsym(handle, symbol));
  if (!slot) *missing += std::string(missing->empty() ? "" : ", ") + symbol;
}

struct Loaded {
  DriverApi driver;
  bool driver_ok = false;
  std::string driver_why;
  NvrtcApi nvrtc;
  bool nvrtc_ok = false;
  std::string nvrtc_why;
  CublasApi cublas;
  bool cublas_ok = false;
  std::string cublas_why;
};

Loaded& load_driver_once() {
  static Loaded loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string tried;
    void* handle = open_first({env_or_empty("PLAIT_LIBCUDA"), "libcuda.so.1", "libcuda.so"}, &tried);
    if (!handle) {
      loaded.driver_why = "the CUDA driver library libcuda.so.1 cannot be loaded (no NVIDIA driver installed?):" + tried;
      return;
    }
    DriverApi& d = loaded.driver;
    std::string missing;
    bind(handle, d.cuInit, "cuInit", &missing);
    bind(handle, d.cuDriverGetVersion, "cuDriverGetVersion", &missing);
    bind(handle, d.cuDeviceGetCount, "cuDeviceGetCount", &missing);
    bind(handle, d.cuDeviceGet, "cuDeviceGet", &missing);
    bind(handle, d.cuDeviceGetAttribute, "cuDeviceGetAttribute", &missing);
    bind(handle, d.cuDeviceGetName, "cuDeviceGetName", &missing);
    bind(handle, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", &missing);
    bind(handle, d.cuCtxGetCurrent, "cuCtxGetCurrent", &missing);
    bind(handle, d.cuCtxSetCurrent, "cuCtxSetCurrent", &missing);
    bind(handle, d.cuCtxGetDevice, "cuCtxGetDevice", &missing);
    bind(handle, d.cuModuleLoadData, "cuModuleLoadData", &missing);
    bind(handle, d.cuModuleUnload, "cuModuleUnload", &missing);
    bind(handle, d.cuModuleGetFunction, "cuModuleGetFunction", &missing);
    bind(handle, d.cuLaunchKernel, "cuLaunchKernel", &missing);
    bind(handle, d.cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel", &missing);
    bind(handle, d.cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor",
         &missing);
    bind(handle, d.cuMemAlloc, "cuMemAlloc_v2", &missing);
    bind(handle, d.cuMemFree, "cuMemFree_v2", &missing);
    bind(handle, d.cuMemAllocHost, "cuMemAllocHost_v2", &missing);
    bind(handle, d.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", &missing);
    bind(handle, d.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", &missing);
    bind(handle, d.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", &missing);
    bind(handle, d.cuMemsetD8Async, "cuMemsetD8Async", &missing);
    bind(handle, d.cuStreamSynchronize, "cuStreamSynchronize", &missing);
    bind(handle, d.cuGetErrorName, "cuGetErrorName", &missing);
    bind(handle, d.cuGetErrorString, "cuGetErrorString", &missing);
    if (!missing.empty()) {
      loaded.driver_why = "the CUDA driver library lacks " + missing + " (driver too old?)";
      return;
    }
    std::string optional;  // entry points plait does without
    bind(handle, d.cuMemAllocAsync, "cuMemAllocAsync", &optional);
    bind(handle, d.cuMemFreeAsync, "cuMemFreeAsync", &optional);
    bind(handle, d.cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", &optional);
    bind(handle, d.cuMemPoolSetAttribute, "cuMemPoolSetAttribute", &optional);
    bind(handle, d.cuFuncSetAttribute, "cuFuncSetAttribute", &optional);
    CUresult init = d.cuInit(0);
    if (init != 0) {
      loaded.driver_why = "cuInit failed: " + error_text(init) + " (no usable NVIDIA GPU?)";
      return;
    }
    int count = 0;
    if (d.cuDeviceGetCount(&count) != 0 || count == 0) {
      loaded.driver_why = "the CUDA driver reports no GPU";
      return;
    }
    loaded.driver_ok = true;
  });
  return loaded;
}

Loaded& load_nvrtc_once() {
  static Loaded loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> names = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"};
    std::vector<std::string> candidates = {env_or_empty("PLAIT_NVRTC")};
    candidates.insert(candidates.end(), names.begin(), names.end());
    for (const std::string& root : {env_or_empty("CUDA_HOME"), env_or_empty("CUDA_PATH"), std::string("/usr/local/cuda")}) {
      if (root.empty()) continue;
      for (const std::string& name : names) candidates.push_back(root + "/lib64/" + name);
    }
    std::string tried;
    void* handle = open_first(candidates, &tried);
    if (!handle) {
      loaded.nvrtc_why =
          "the CUDA runtime compiler NVRTC (libnvrtc.so) cannot be loaded; install the CUDA toolkit or the "
          "nvidia-cuda-nvrtc package, or set PLAIT_NVRTC to its path:" + tried;
      return;
    }
    NvrtcApi& n = loaded.nvrtc;
    std::string missing;
    bind(handle, n.nvrtcVersion, "nvrtcVersion", &missing);
    bind(handle, n.nvrtcCreateProgram, "nvrtcCreateProgram", &missing);
    bind(handle, n.nvrtcDestroyProgram, "nvrtcDestroyProgram", &missing);
    bind(handle, n.nvrtcCompileProgram, "nvrtcCompileProgram", &missing);
    bind(handle, n.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", &missing);
    bind(handle, n.nvrtcGetProgramLog, "nvrtcGetProgramLog", &missing);
    bind(handle, n.nvrtcGetPTXSize, "nvrtcGetPTXSize", &missing);
    bind(handle, n.nvrtcGetPTX, "nvrtcGetPTX", &missing);
    bind(handle, n.nvrtcGetCUBINSize, "nvrtcGetCUBINSize", &missing);
    bind(handle, n.nvrtcGetCUBIN, "nvrtcGetCUBIN", &missing);
    bind(handle, n.nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs", &missing);
    bind(handle, n.nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs", &missing);
    bind(handle, n.nvrtcGetErrorString, "nvrtcGetErrorString", &missing);
    if (!missing.empty()) {
      loaded.nvrtc_why = "the NVRTC library lacks " + missing + " (CUDA 11.2 or newer is needed)";
      return;
    }
    loaded.nvrtc_ok = true;
  });
  return loaded;
}

Loaded& load_cublas_once() {
  static Loaded loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::vector<std::string> names = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    void* handle = nullptr;
    if (const std::string chosen = env_or_empty("PLAIT_CUBLAS"); !chosen.empty()) {
      handle = ::dlopen(chosen.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    }
    for (size_t k = 0; !handle && k + 1 < names.size(); ++k)
      handle = ::dlopen(names[k].c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE | RTLD_NOLOAD);
    std::string tried;
    if (!handle) {
      std::vector<std::string> candidates = names;
      for (const std::string& root : {env_or_empty("CUDA_HOME"), env_or_empty("CUDA_PATH"), std::string("/usr/local/cuda")}) {
        if (root.empty()) continue;
        for (const std::string& name : names) candidates.push_back(root + "/lib64/" + name);
      }
      handle = open_first(candidates, &tried);
    }
    if (!handle) {
      loaded.cublas_why = "cuBLAS (libcublas.so) cannot be loaded; set PLAIT_CUBLAS to its path:" + tried;
      return;
    }
    CublasApi& c = loaded.cublas;
    std::string missing;
    bind(handle, c.cublasCreate_v2, "cublasCreate_v2", &missing);
    bind(handle, c.cublasSetStream_v2, "cublasSetStream_v2", &missing);
    bind(handle, c.cublasSgemm_v2, "cublasSgemm_v2", &missing);
    bind(handle, c.cublasDgemm_v2, "cublasDgemm_v2", &missing);
    bind(handle, c.cublasSsyrkx, "cublasSsyrkx", &missing);
    bind(handle, c.cublasDsyrkx, "cublasDsyrkx", &missing);
    bind(handle, c.cublasStrmm_v2, "cublasStrmm_v2", &missing);
    bind(handle, c.cublasDtrmm_v2, "cublasDtrmm_v2", &missing);
    bind(handle, c.cublasSsymm_v2, "cublasSsymm_v2", &missing);
    bind(handle, c.cublasDsymm_v2, "cublasDsymm_v2", &missing);
    bind(handle, c.cublasStrsv_v2, "cublasStrsv_v2", &missing);
    bind(handle, c.cublasDtrsv_v2, "cublasDtrsv_v2", &missing);
    bind(handle, c.cublasScopy_v2, "cublasScopy_v2", &missing);
    bind(handle, c.cublasDcopy_v2, "cublasDcopy_v2", &missing);
    if (!missing.empty()) {
      loaded.cublas_why = "the cuBLAS library lacks " + missing;
      return;
    }
    loaded.cublas_ok = true;
  });
  return loaded;
}

}  // namespace

const CublasApi* cublas(std::string* why) {
  Loaded& loaded = load_cublas_once();
  if (!loaded.cublas_ok && why) *why = loaded.cublas_why;
  return loaded.cublas_ok ? &loaded.cublas : nullptr;
}

const DriverApi* driver(std::string* why) {
  Loaded& loaded = load_driver_once();
  if (!loaded.driver_ok && why) *why = loaded.driver_why;
  return loaded.driver_ok ? &loaded.driver : nullptr;
}

const NvrtcApi* nvrtc(std::string* why) {
  Loaded& loaded = load_nvrtc_once();
  if (!loaded.nvrtc_ok && why) *why = loaded.nvrtc_why;
  return loaded.nvrtc_ok ? &loaded.nvrtc : nullptr;
}

std::string error_text(CUresult result) {
  const DriverApi& d = load_driver_once().driver;
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.cuGetErrorName) d.cuGetErrorName(result, &name);
  if (d.cuGetErrorString) d.cuGetErrorString(result, &text);
  std::string out = name ? name : "CUDA error " + std::to_string(result);
  if (text) out += std::string(": ") + text;
  return out;
}

std::string nvrtc_version() {
  std::string why;
  const NvrtcApi* n = nvrtc(&why);
  if (!n) PLAIT_INTERNAL_ERROR(why);
  int major = 0, minor = 0;
  n->nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<int> nvrtc_supported_archs() {
  std::string why;
  const NvrtcApi* n = nvrtc(&why);
  if (!n) PLAIT_INTERNAL_ERROR(why);
  int count = 0;
  if (n->nvrtcGetNumSupportedArchs(&count) != 0 || count <= 0) return {};
  std::vector<int> archs(static_cast<size_t>(count));
  if (n->nvrtcGetSupportedArchs(archs.data()) != 0) return {};
  return archs;
}

NvrtcOutput nvrtc_compile(const std::string& source, const std::string& name, int arch, bool virtual_arch,
                          const std::vector<std::string>& options) {
  std::string why;
  const NvrtcApi* n = nvrtc(&why);
  if (!n) PLAIT_INTERNAL_ERROR(why);
  nvrtcProgram program = nullptr;
  nvrtcResult created = n->nvrtcCreateProgram(&program, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  if (created != 0) PLAIT_INTERNAL_ERROR(std::string("nvrtcCreateProgram failed: ") + n->nvrtcGetErrorString(created));
  struct Destroy {
    const NvrtcApi* n;
    nvrtcProgram* program;
    ~Destroy() { n->nvrtcDestroyProgram(program); }
  } destroy{n, &program};

  std::vector<std::string> all = {std::string("--gpu-architecture=") + (virtual_arch ? "compute_" : "sm_") +
                                  std::to_string(arch)};
  all.insert(all.end(), options.begin(), options.end());
  std::vector<const char*> argv;
  for (const std::string& option : all) argv.push_back(option.c_str());
  nvrtcResult compiled = n->nvrtcCompileProgram(program, static_cast<int>(argv.size()), argv.data());

  NvrtcOutput out;
  size_t log_size = 0;
  if (n->nvrtcGetProgramLogSize(program, &log_size) == 0 && log_size > 1) {
    out.log.resize(log_size);
    n->nvrtcGetProgramLog(program, out.log.data());
    out.log.resize(log_size - 1);
  }
  if (compiled != 0) {
    std::string flags;
    for (const std::string& option : all) flags += " " + option;
    PLAIT_INTERNAL_ERROR(std::string("NVRTC failed to compile the generated CUDA C++ (") +
                         n->nvrtcGetErrorString(compiled) + ")\noptions:" + flags + "\n" + out.log);
  }
  size_t size = 0;
  if (n->nvrtcGetPTXSize(program, &size) == 0 && size > 0) {
    out.ptx.resize(size);
    if (n->nvrtcGetPTX(program, out.ptx.data()) != 0) out.ptx.clear();
    if (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  }
  if (!virtual_arch && n->nvrtcGetCUBINSize(program, &size) == 0 && size > 0) {
    out.cubin.resize(size);
    if (n->nvrtcGetCUBIN(program, out.cubin.data()) != 0) out.cubin.clear();
  }
  return out;
}

}  // namespace plait::jit::cuda
