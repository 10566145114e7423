// Types of the typed IR.
//
// Scalars follow NumPy 2 (NEP 50): a value is either "strong" (a NumPy scalar
// or array element: its dtype is fixed) or "weak" (a Python int/float/bool:
// it adapts to the strong operand it meets). Weak ints are held as int64 and
// weak floats as float64, as NumPy does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace plait {

enum class ScalarKind : uint8_t { Bool, Int32, Int64, Float32, Float64 };

struct ScalarType {
  ScalarKind kind = ScalarKind::Int64;
  bool weak = false;

  bool is_bool() const { return kind == ScalarKind::Bool; }
  bool is_int() const { return kind == ScalarKind::Int32 || kind == ScalarKind::Int64; }
  bool is_float() const { return kind == ScalarKind::Float32 || kind == ScalarKind::Float64; }
  int bits() const;
  ScalarType strong() const { return ScalarType{kind, false}; }
  bool operator==(const ScalarType& o) const { return kind == o.kind && weak == o.weak; }
  bool operator!=(const ScalarType& o) const { return !(*this == o); }

  static ScalarType b1() { return {ScalarKind::Bool, false}; }
  static ScalarType i32() { return {ScalarKind::Int32, false}; }
  static ScalarType i64() { return {ScalarKind::Int64, false}; }
  static ScalarType f32() { return {ScalarKind::Float32, false}; }
  static ScalarType f64() { return {ScalarKind::Float64, false}; }
  static ScalarType py_bool() { return {ScalarKind::Bool, true}; }
  static ScalarType py_int() { return {ScalarKind::Int64, true}; }
  static ScalarType py_float() { return {ScalarKind::Float64, true}; }
};

// "b1", "i32", "i64", "f32", "f64"; weak: "bool", "int", "float".
std::string to_string(ScalarType t);
// NumPy dtype name: "bool", "int32", "int64", "float32", "float64".
const char* numpy_dtype_name(ScalarKind k);
// The C type used by generated C++: "bool", "int32_t", ... "double".
const char* c_type_name(ScalarKind k);

// The NEP 50 result type of a binary arithmetic operation on a and b
// (before operator-specific rules such as true division going to float).
ScalarType promote(ScalarType a, ScalarType b);
// The one type a local keeps when it is assigned values of types a and b
// (int and float unify to float; strong wins over weak).
ScalarType unify(ScalarType a, ScalarType b);

// Memory layout class of an array argument. The kernel is specialised on it:
// C means the last dimension has unit stride, F the first; Any is strided.
enum class Layout : uint8_t { C, F, Any };

struct ArrayType {
  ScalarKind dtype = ScalarKind::Float64;
  int ndim = 1;
  Layout layout = Layout::Any;
  bool operator==(const ArrayType& o) const { return dtype == o.dtype && ndim == o.ndim && layout == o.layout; }
  bool operator!=(const ArrayType& o) const { return !(*this == o); }
};

// Numba-style spelling: "f64[:, ::1]" (C), "f64[::1, :]" (F), "f64[:, :]" (Any).
// 1-D contiguous arrays are C: "f64[::1]".
std::string to_string(const ArrayType& t);

// The type of one kernel argument or returned value.
struct ValueType {
  enum class Tag : uint8_t { Scalar, Array } tag = Tag::Scalar;
  ScalarType scalar;
  ArrayType array;

  bool is_array() const { return tag == Tag::Array; }
  static ValueType of(ScalarType s) { ValueType v; v.tag = Tag::Scalar; v.scalar = s; return v; }
  static ValueType of(ArrayType a) { ValueType v; v.tag = Tag::Array; v.array = a; return v; }
  bool operator==(const ValueType& o) const {
    return tag == o.tag && (is_array() ? array == o.array : scalar == o.scalar);
  }
};
std::string to_string(const ValueType& t);

// A call signature: the types of the arguments in order, e.g. from
// "i64[::1], i32[::1], f64[::1], f64[::1]". Parsing errors throw
// std::invalid_argument with a readable message.
struct Signature {
  std::vector<ValueType> args;
  static Signature parse(const std::string& text);
  std::string to_string() const;
  bool operator==(const Signature& o) const { return args == o.args; }
};

}  // namespace plait
