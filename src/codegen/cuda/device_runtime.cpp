// The device and host support texts of generated CUDA code: the texts of
// runtime/, with the enumerations of error kinds and messages.
#include "codegen/cuda/device_runtime.h"

#include "codegen/runtime_text.h"

namespace plait {
// The texts of runtime/cuda_device_runtime.cuh and runtime/cuda_host_runtime.h
// (cmake/embed_file.cmake).
extern const char* const kCudaDeviceRuntimeText;
extern const char* const kCudaHostRuntimeText;
}  // namespace plait

namespace plait::codegen::cuda {

const std::string& device_runtime_text() {
  static const std::string text = [] {
    std::string out =
        "// ---- plait device runtime\n"
        "#ifdef __CUDACC_RTC__\n"
        "typedef signed char int8_t;\ntypedef short int16_t;\ntypedef int int32_t;\ntypedef long long int64_t;\n"
        "typedef unsigned char uint8_t;\ntypedef unsigned short uint16_t;\n"
        "typedef unsigned int uint32_t;\ntypedef unsigned long long uint64_t;\n"
        "#else\n#include <cstdint>\n#endif\n\n"
        "namespace plait {\n\n";
    out += error_codes_text() + "\n";
    out += with_portable_runtime(kCudaDeviceRuntimeText);
    out += "\n}  // namespace plait\n";
    return out;
  }();
  return text;
}

const std::string& host_cuda_runtime_text() {
  static const std::string text = std::string("\n") + kCudaHostRuntimeText;
  return text;
}

}  // namespace plait::codegen::cuda
