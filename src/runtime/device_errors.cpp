#include "runtime/device_errors.h"

#include <cstdio>

#include "runtime/abi.h"

namespace plait::runtime {
namespace {

constexpr DeviceMessageInfo kMessages[] = {
    {DeviceMessage::None, "msg_none", ""},
    {DeviceMessage::IndexOutOfBounds, "msg_index_out_of_bounds",
     "index %lld is out of bounds for axis %lld with size %lld"},
    {DeviceMessage::FloatDivisionByZero, "msg_float_division_by_zero", "float division by zero"},
    {DeviceMessage::FloatFloorDivisionByZero, "msg_float_floor_division_by_zero", "float floor division by zero"},
    {DeviceMessage::IntegerDivisionByZero, "msg_integer_division_by_zero", "integer division or modulo by zero"},
    {DeviceMessage::FloatModulo, "msg_float_modulo", "float modulo"},
    {DeviceMessage::IntegerModuloByZero, "msg_integer_modulo_by_zero", "integer modulo by zero"},
    {DeviceMessage::NegativeIntegerPower, "msg_negative_integer_power",
     "Integers to negative integer powers are not allowed."},
    {DeviceMessage::ZeroToNegativePower, "msg_zero_to_negative_power", "0.0 cannot be raised to a negative power"},
    {DeviceMessage::FloatNanToInteger, "msg_float_nan_to_integer", "cannot convert float NaN to integer"},
    {DeviceMessage::FloatInfinityToInteger, "msg_float_infinity_to_integer",
     "cannot convert float infinity to integer"},
    {DeviceMessage::IntTooLargeForInt32, "msg_int_too_large_for_int32", "int too large to convert to int32"},
    {DeviceMessage::IntTooLargeForInt64, "msg_int_too_large_for_int64", "int too large to convert to int64"},
    {DeviceMessage::MathDomainError, "msg_math_domain_error", "math domain error"},
    {DeviceMessage::MathRangeError, "msg_math_range_error", "math range error"},
    {DeviceMessage::PythonIntOutOfInt8, "msg_python_int_out_of_int8", "Python integer %lld out of bounds for int8"},
    {DeviceMessage::PythonIntOutOfInt16, "msg_python_int_out_of_int16", "Python integer %lld out of bounds for int16"},
    {DeviceMessage::PythonIntOutOfInt32, "msg_python_int_out_of_int32", "Python integer %lld out of bounds for int32"},
    {DeviceMessage::PythonIntOutOfUInt8, "msg_python_int_out_of_uint8", "Python integer %lld out of bounds for uint8"},
    {DeviceMessage::PythonIntOutOfUInt16, "msg_python_int_out_of_uint16",
     "Python integer %lld out of bounds for uint16"},
    {DeviceMessage::PythonIntOutOfUInt32, "msg_python_int_out_of_uint32",
     "Python integer %lld out of bounds for uint32"},
    {DeviceMessage::PythonIntOutOfUInt64, "msg_python_int_out_of_uint64",
     "Python integer %lld out of bounds for uint64"},
    {DeviceMessage::NegativeDimensions, "msg_negative_dimensions", "negative dimensions are not allowed"},
    {DeviceMessage::TemporaryLargerThanSized, "msg_temporary_larger_than_sized",
     "an array allocated inside a parallel loop came out larger on the GPU than the host computed before the launch"},
    {DeviceMessage::AssertFailed, "msg_assert_failed", ""},
    {DeviceMessage::NegativePythonIntPower, "msg_negative_python_int_power",
     "a negative exponent in a power of Python ints: Python gives a float, but the kernel typed this power as int (its "
     "exponent is not a constant); write 2.0 ** n or float(b) ** n for a float"},
    {DeviceMessage::FloatPowerOverflow, "msg_float_power_overflow", "(34, 'Numerical result out of range')"},
};
static_assert(sizeof(kMessages) / sizeof(kMessages[0]) == static_cast<size_t>(DeviceMessage::Count));
static_assert(sizeof(DeviceErrorRecord) <= PLAIT_CUDA_ERROR_BYTES);

}  // namespace

std::span<const DeviceMessageInfo> device_messages() {
  return kMessages;
}

std::string device_error_message(const DeviceErrorRecord& record, const std::vector<std::string>& assert_messages) {
  if (record.message == static_cast<int32_t>(DeviceMessage::AssertFailed) && record.values[0] >= 0 &&
      static_cast<size_t>(record.values[0]) < assert_messages.size()) {
    return assert_messages[static_cast<size_t>(record.values[0])];
  }
  if (record.message <= 0 || record.message >= static_cast<int32_t>(DeviceMessage::Count)) {
    return "error " + std::to_string(record.kind) + " in device code";
  }
  char text[200];
  std::snprintf(text, sizeof text, kMessages[record.message].format, static_cast<long long>(record.values[0]),
                static_cast<long long>(record.values[1]), static_cast<long long>(record.values[2]));
  return text;
}

}  // namespace plait::runtime
