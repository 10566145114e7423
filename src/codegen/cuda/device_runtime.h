// Texts the CUDA back end pastes into generated code, and the table of
// run-time error messages device code reports by number.
//
// Device code cannot format strings, so it records an error as
// {kind, line, col, message number, three integers} in the device error
// record at the start of the call's scratch buffer (see runtime/abi.h); the
// host formats the message after the stream has finished.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace plait::codegen::cuda {

// The device error record, as device code writes it (64 bytes at most).
struct DeviceErrorRecord {
  int32_t kind;     // plait_error_kind; 0 while no error
  int32_t line;
  int32_t col;
  int32_t message;  // DeviceMessage
  int64_t values[3];
};

enum class DeviceMessage : int32_t {
  None = 0,
  IndexOutOfBounds,  // values: index, axis, extent
  FloatDivisionByZero,
  FloatFloorDivisionByZero,
  IntegerDivisionByZero,
  FloatModulo,
  IntegerModuloByZero,
  NegativeIntegerPower,
  ZeroToNegativePower,
  FloatNanToInteger,
  FloatInfinityToInteger,
  IntTooLargeForInt32,
  IntTooLargeForInt64,
  MathDomainError,
  MathRangeError,
  PythonIntOutOfInt8,  // values: the int (likewise the next six)
  PythonIntOutOfInt16,
  PythonIntOutOfInt32,
  PythonIntOutOfUInt8,
  PythonIntOutOfUInt16,
  PythonIntOutOfUInt32,
  PythonIntOutOfUInt64,
  NegativeDimensions,
  TemporaryLargerThanSized,
  AssertFailed,  // values[0]: the index of the kernel's assertion message
  NegativePythonIntPower,
  FloatPowerOverflow,
  Count,
};

// The message Python raises for a device error record; `assert_messages`
// are the kernel's messages of failed IR assertions (CudaSources).
std::string device_error_message(const DeviceErrorRecord& record, const std::vector<std::string>& assert_messages);

// The support code of device sources: fixed-width types, error reports,
// Python/NumPy arithmetic, atomics and warp-level reductions. Compiles with
// NVRTC (which has no standard headers) and with nvcc.
const std::string& device_runtime_text();

// Host-side helpers of the host part of CUDA kernels (pasted after abi.h
// and plait_runtime.h): device array allocation and element access through
// plait_cuda_api, launch geometry.
const std::string& host_cuda_runtime_text();

}  // namespace plait::codegen::cuda
