// Types of the typed IR.
//
// Scalars follow NumPy 2 (NEP 50): a value is either "strong" (a NumPy scalar
// or array element: its dtype is fixed) or "weak" (a Python int/float/bool:
// it adapts to the strong operand it meets). Weak ints are held as int64 and
// weak floats as float64, as NumPy does.
//
// Integers are signed (int8 ... int64) or unsigned (uint8 ... uint64). A weak
// int meeting a strong integer takes that integer's type and must fit in it
// (NumPy raises OverflowError otherwise); mixed signedness promotes to the
// next wider signed type, and int64 with uint64 to float64, as NumPy does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace plait {

// The order is the dtype code of runtime/abi.h (plait_dtype).
enum class ScalarKind : uint8_t { Bool, Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float32, Float64 };
constexpr int kNumScalarKinds = 11;

struct ScalarType {
  ScalarKind kind = ScalarKind::Int64;
  bool weak = false;

  bool is_bool() const { return kind == ScalarKind::Bool; }
  bool is_int() const { return is_signed_int() || is_unsigned(); }
  bool is_signed_int() const { return kind >= ScalarKind::Int8 && kind <= ScalarKind::Int64; }
  bool is_unsigned() const { return kind >= ScalarKind::UInt8 && kind <= ScalarKind::UInt64; }
  bool is_float() const { return kind == ScalarKind::Float32 || kind == ScalarKind::Float64; }
  // Width in bits (8 for bool).
  int bits() const;
  ScalarType strong() const { return ScalarType{kind, false}; }
  bool operator==(const ScalarType& o) const { return kind == o.kind && weak == o.weak; }
  bool operator!=(const ScalarType& o) const { return !(*this == o); }

  static ScalarType b1() { return {ScalarKind::Bool, false}; }
  static ScalarType i8() { return {ScalarKind::Int8, false}; }
  static ScalarType i16() { return {ScalarKind::Int16, false}; }
  static ScalarType i32() { return {ScalarKind::Int32, false}; }
  static ScalarType i64() { return {ScalarKind::Int64, false}; }
  static ScalarType u8() { return {ScalarKind::UInt8, false}; }
  static ScalarType u16() { return {ScalarKind::UInt16, false}; }
  static ScalarType u32() { return {ScalarKind::UInt32, false}; }
  static ScalarType u64() { return {ScalarKind::UInt64, false}; }
  static ScalarType f32() { return {ScalarKind::Float32, false}; }
  static ScalarType f64() { return {ScalarKind::Float64, false}; }
  static ScalarType py_bool() { return {ScalarKind::Bool, true}; }
  static ScalarType py_int() { return {ScalarKind::Int64, true}; }
  static ScalarType py_float() { return {ScalarKind::Float64, true}; }
};

// "b1", "i8" ... "i64", "u8" ... "u64", "f32", "f64" (the width in bits);
// weak: "bool", "int", "float".
std::string to_string(ScalarType t);
// NumPy dtype name: "bool", "int8", ..., "uint64", "float32", "float64".
const char* numpy_dtype_name(ScalarKind k);
// The C type used by generated C++: "bool", "int8_t", ..., "uint64_t", "float", "double".
const char* c_type_name(ScalarKind k);
// The enumerator of runtime/abi.h's plait_dtype: "PLAIT_BOOL", "PLAIT_UINT32"...
std::string plait_dtype_name(ScalarKind k);
// v converted to integer kind k as C++ and NumPy convert: the low bits, sign-
// or zero-extended (uint64 values are held as their int64 bit pattern).
int64_t wrap_int(int64_t v, ScalarKind k);
// The signed or unsigned integer kind of `bits` bits.
ScalarKind int_kind(int bits, bool is_unsigned);
// The smallest and largest value of an integer kind (uint64's largest does
// not fit in int64 and is given as INT64_MAX: a weak int never exceeds it).
int64_t int_min(ScalarKind k);
int64_t int_max(ScalarKind k);

// The NEP 50 result type of a binary arithmetic operation on a and b
// (before operator-specific rules such as true division going to float).
// A weak int meeting a strong integer gives that integer type; whether the
// Python int fits is checked where the value is converted.
ScalarType promote(ScalarType a, ScalarType b);
// The type in which a comparison of a and b is exact, or nullopt when no
// single type is (a signed 64-bit value or a Python int against uint64),
// in which case the comparison tests the sign first.
std::optional<ScalarType> exact_compare_type(ScalarType a, ScalarType b);
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

// Numba-style spelling: "f64[:, ::1]" (C), "f64[::1, :]" (F), "f64[:, :]" (Any);
// the element type is spelled as a strong scalar ("u32[::1]").
// 1-D contiguous arrays are C: "f64[::1]".
std::string to_string(const ArrayType& t);

// A SciPy sparse matrix in CSR form: its values of `dtype`, its index arrays
// (indices and indptr) of `index` (int32 or int64); a csr_matrix when
// `matrix`, else a csr_array. Kernels take it as its arrays (abi_types).
struct SparseType {
  ScalarKind dtype = ScalarKind::Float64;
  ScalarKind index = ScalarKind::Int32;
  bool matrix = false;
  // Stored by columns: a kernel's result that is a transpose (`return S.T`),
  // whose arrays are its operand's CSR arrays. Arguments are CSR.
  bool csc = false;
  bool operator==(const SparseType& o) const {
    return dtype == o.dtype && index == o.index && matrix == o.matrix && csc == o.csc;
  }
  bool operator!=(const SparseType& o) const { return !(*this == o); }
};

// "csr[f64, i32]" (a csr_array), "csr_matrix[f32, i64]"; a result's "csc[...]".
std::string to_string(const SparseType& t);

// The type of one kernel argument or returned value.
struct ValueType {
  enum class Tag : uint8_t { Scalar, Array, Sparse, List, Dict, Set } tag = Tag::Scalar;
  ScalarType scalar;
  ArrayType array;
  SparseType sparse;
  // A list (a kernel's result only): its elements' types, one per item of
  // a tuple when `tuple_items`. A dict: its key and value types; a set: its
  // key type.
  std::vector<ScalarType> items;
  bool tuple_items = false;

  bool is_array() const { return tag == Tag::Array; }
  bool is_sparse() const { return tag == Tag::Sparse; }
  bool is_list() const { return tag == Tag::List; }
  bool is_container() const { return tag == Tag::List || tag == Tag::Dict || tag == Tag::Set; }
  static ValueType of_table(std::vector<ScalarType> items, bool set) {
    ValueType v;
    v.tag = set ? Tag::Set : Tag::Dict;
    v.items = std::move(items);
    return v;
  }
  static ValueType of_list(std::vector<ScalarType> items, bool tuple) {
    ValueType v;
    v.tag = Tag::List;
    v.items = std::move(items);
    v.tuple_items = tuple;
    return v;
  }
  static ValueType of(ScalarType s) { ValueType v; v.tag = Tag::Scalar; v.scalar = s; return v; }
  static ValueType of(ArrayType a) { ValueType v; v.tag = Tag::Array; v.array = a; return v; }
  static ValueType of(SparseType t) {
    ValueType v;
    v.tag = Tag::Sparse;
    v.sparse = t;
    return v;
  }
  bool operator==(const ValueType& o) const {
    if (tag != o.tag) return false;
    if (is_sparse()) return sparse == o.sparse;
    if (is_container()) return items == o.items && tuple_items == o.tuple_items;
    return is_array() ? array == o.array : scalar == o.scalar;
  }
};
std::string to_string(const ValueType& t);

// The arguments a kernel's entry point takes for one argument of type t: t
// itself, or for a sparse matrix its values, column indices and row
// pointers (contiguous 1-D arrays) and its column count (a Python int); for
// a list (a result) one 1-D array per item of its elements.
std::vector<ValueType> abi_types(const ValueType& t);

// A call signature: the types of the arguments in order, e.g. from
// "i64[::1], i32[::1], f64[::1], f64[::1]". Parsing errors throw
// std::invalid_argument with a readable message.
struct Signature {
  std::vector<ValueType> args;
  static Signature parse(const std::string& text);
  std::string to_string() const;
  // The signature of the entry point: each argument as abi_types gives it.
  Signature abi() const;
  bool operator==(const Signature& o) const { return args == o.args; }
};

}  // namespace plait
