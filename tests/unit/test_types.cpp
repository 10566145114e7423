// Tests of the scalar type rules: NEP 50 promotion over every integer width
// and signedness, the exact comparison type, and the signature spelling.
#include <gtest/gtest.h>

#include <stdexcept>

#include "ir/types.h"

namespace plait {
namespace {

ScalarType S(ScalarKind k) { return ScalarType{k, false}; }

TEST(Types, SameSignednessKeepsTheWiderInteger) {
  EXPECT_EQ(promote(ScalarType::u8(), ScalarType::u8()), ScalarType::u8());
  EXPECT_EQ(promote(ScalarType::u8(), ScalarType::u32()), ScalarType::u32());
  EXPECT_EQ(promote(ScalarType::u64(), ScalarType::u16()), ScalarType::u64());
  EXPECT_EQ(promote(ScalarType::i8(), ScalarType::i16()), ScalarType::i16());
  EXPECT_EQ(promote(ScalarType::i32(), ScalarType::i64()), ScalarType::i64());
}

TEST(Types, MixedSignednessGoesToAWiderSignedType) {
  EXPECT_EQ(promote(ScalarType::u8(), ScalarType::i8()), ScalarType::i16());
  EXPECT_EQ(promote(ScalarType::i8(), ScalarType::u16()), ScalarType::i32());
  EXPECT_EQ(promote(ScalarType::u32(), ScalarType::i32()), ScalarType::i64());
  EXPECT_EQ(promote(ScalarType::u32(), ScalarType::i64()), ScalarType::i64());
  EXPECT_EQ(promote(ScalarType::u8(), ScalarType::i64()), ScalarType::i64());
  // int16 holds every uint8: no widening.
  EXPECT_EQ(promote(ScalarType::i16(), ScalarType::u8()), ScalarType::i16());
  // No signed type holds uint64: NumPy goes to float64.
  EXPECT_EQ(promote(ScalarType::u64(), ScalarType::i64()), ScalarType::f64());
  EXPECT_EQ(promote(ScalarType::i8(), ScalarType::u64()), ScalarType::f64());
}

TEST(Types, IntegersWithFloats) {
  EXPECT_EQ(promote(ScalarType::u8(), ScalarType::f32()), ScalarType::f32());
  EXPECT_EQ(promote(ScalarType::i16(), ScalarType::f32()), ScalarType::f32());
  EXPECT_EQ(promote(ScalarType::u16(), ScalarType::f32()), ScalarType::f32());
  EXPECT_EQ(promote(ScalarType::u32(), ScalarType::f32()), ScalarType::f64());
  EXPECT_EQ(promote(ScalarType::i32(), ScalarType::f32()), ScalarType::f64());
  EXPECT_EQ(promote(ScalarType::u64(), ScalarType::f32()), ScalarType::f64());
  EXPECT_EQ(promote(ScalarType::u8(), ScalarType::f64()), ScalarType::f64());
}

TEST(Types, WeakScalarsTakeTheStrongIntegerType) {
  for (ScalarKind k : {ScalarKind::Int8, ScalarKind::Int16, ScalarKind::UInt8, ScalarKind::UInt16, ScalarKind::UInt32,
                       ScalarKind::UInt64}) {
    EXPECT_EQ(promote(S(k), ScalarType::py_int()), S(k)) << numpy_dtype_name(k);
    EXPECT_EQ(promote(ScalarType::py_bool(), S(k)), S(k)) << numpy_dtype_name(k);
    EXPECT_EQ(promote(S(k), ScalarType::py_float()), ScalarType::f64()) << numpy_dtype_name(k);
  }
  EXPECT_EQ(promote(ScalarType::b1(), ScalarType::u8()), ScalarType::u8());
}

TEST(Types, ExactComparisonTypes) {
  EXPECT_EQ(exact_compare_type(ScalarType::u32(), ScalarType::i32()), ScalarType::i64());
  EXPECT_EQ(exact_compare_type(ScalarType::u8(), ScalarType::i8()), ScalarType::i16());
  // A Python int compares in int64 with anything that fits in int64.
  EXPECT_EQ(exact_compare_type(ScalarType::u32(), ScalarType::py_int()), ScalarType::i64());
  EXPECT_EQ(exact_compare_type(ScalarType::py_int(), ScalarType::i8()), ScalarType::i64());
  EXPECT_EQ(exact_compare_type(ScalarType::py_int(), ScalarType::py_int()), ScalarType::py_int());
  EXPECT_EQ(exact_compare_type(ScalarType::u64(), ScalarType::u8()), ScalarType::u64());
  // Signed values against uint64 have no common exact type.
  EXPECT_FALSE(exact_compare_type(ScalarType::u64(), ScalarType::i64()).has_value());
  EXPECT_FALSE(exact_compare_type(ScalarType::i8(), ScalarType::u64()).has_value());
  EXPECT_FALSE(exact_compare_type(ScalarType::py_int(), ScalarType::u64()).has_value());
  // Floats compare as they promote.
  EXPECT_EQ(exact_compare_type(ScalarType::u64(), ScalarType::f32()), ScalarType::f64());
}

TEST(Types, IntegerRangesAndWrapping) {
  EXPECT_EQ(int_min(ScalarKind::Int8), -128);
  EXPECT_EQ(int_max(ScalarKind::Int8), 127);
  EXPECT_EQ(int_min(ScalarKind::UInt16), 0);
  EXPECT_EQ(int_max(ScalarKind::UInt16), 65535);
  EXPECT_EQ(int_max(ScalarKind::UInt32), 4294967295);
  EXPECT_EQ(int_max(ScalarKind::UInt64), INT64_MAX);
  EXPECT_EQ(int_min(ScalarKind::Int64), INT64_MIN);
  EXPECT_EQ(wrap_int(300, ScalarKind::UInt8), 44);
  EXPECT_EQ(wrap_int(-1, ScalarKind::UInt32), 4294967295);
  EXPECT_EQ(wrap_int(200, ScalarKind::Int8), -56);
  EXPECT_EQ(wrap_int(-1, ScalarKind::UInt64), -1);
  EXPECT_EQ(ScalarType::u16().bits(), 16);
  EXPECT_TRUE(ScalarType::u8().is_int());
  EXPECT_TRUE(ScalarType::u8().is_unsigned());
  EXPECT_FALSE(ScalarType::i8().is_unsigned());
  EXPECT_TRUE(ScalarType::i8().is_signed_int());
}

TEST(Types, Names) {
  EXPECT_EQ(to_string(ScalarType::u32()), "u32");
  EXPECT_EQ(to_string(ScalarType::i8()), "i8");
  EXPECT_EQ(std::string(numpy_dtype_name(ScalarKind::UInt16)), "uint16");
  EXPECT_EQ(std::string(c_type_name(ScalarKind::UInt64)), "uint64_t");
  EXPECT_EQ(plait_dtype_name(ScalarKind::UInt32), "PLAIT_UINT32");
  EXPECT_EQ(plait_dtype_name(ScalarKind::Float64), "PLAIT_FLOAT64");
}

TEST(Types, SignaturesSpellEveryWidth) {
  Signature sig = Signature::parse("u32[::1], i8, u8[:, :], i16[::1, :], u64, u16");
  ASSERT_EQ(sig.args.size(), 6u);
  EXPECT_EQ(sig.args[0].array.dtype, ScalarKind::UInt32);
  EXPECT_EQ(sig.args[1].scalar, ScalarType::i8());
  EXPECT_EQ(sig.args[2].array.dtype, ScalarKind::UInt8);
  EXPECT_EQ(sig.args[3].array.layout, Layout::F);
  EXPECT_EQ(sig.args[3].array.dtype, ScalarKind::Int16);
  EXPECT_EQ(sig.args[4].scalar, ScalarType::u64());
  EXPECT_EQ(sig.to_string(), "u32[::1], i8, u8[:, :], i16[::1, :], u64, u16");
  EXPECT_THROW(Signature::parse("u128[::1]"), std::invalid_argument);
  EXPECT_THROW(Signature::parse("uint32"), std::invalid_argument);
}

}  // namespace
}  // namespace plait
