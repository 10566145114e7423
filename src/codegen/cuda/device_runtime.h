// Texts the CUDA back end pastes into generated code: the device runtime
// (with the message numbers of runtime/device_errors.h) and the host part's
// helpers.
#pragma once

#include <string>

namespace plait::codegen::cuda {

// The support code of device sources: fixed-width types, error reports,
// Python/NumPy arithmetic, atomics and warp-level reductions. Compiles with
// NVRTC (which has no standard headers) and with nvcc.
const std::string& device_runtime_text();

// Host-side helpers of the host part of CUDA kernels (pasted after abi.h
// and plait_runtime.h): device array allocation and element access through
// plait_cuda_api, launch geometry.
const std::string& host_cuda_runtime_text();

}  // namespace plait::codegen::cuda
