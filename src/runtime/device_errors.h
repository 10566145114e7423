// The device error record and the run-time error messages that device code
// and portable_runtime.h report by number, shared by the code generators
// (codegen/runtime_text.cpp prints the numbers into the device runtime and
// into CPU kernels, with the formats, which CPU kernels fill in when they
// raise) and the CUDA runtime (which formats the record after a call).
//
// Device code cannot format strings, so it records an error as
// {kind, line, col, message number, three integers} in the device error
// record at the start of the call's scratch buffer (see abi.h); the host
// formats the message after the stream has finished.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace plait::runtime {

// The device error record, as device code writes it (64 bytes at most).
struct DeviceErrorRecord {
  int32_t kind;  // plait_error_kind; 0 while no error
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
// are the kernel's messages of failed IR assertions (codegen's CudaSources).
std::string device_error_message(const DeviceErrorRecord& record, const std::vector<std::string>& assert_messages);

// A message's enumerator in device code (`msg_index_out_of_bounds`) and its
// printf format over values[0..2] (as long long), in DeviceMessage order.
struct DeviceMessageInfo {
  DeviceMessage id;
  const char* name;
  const char* format;
};
std::span<const DeviceMessageInfo> device_messages();

}  // namespace plait::runtime
