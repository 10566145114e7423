// How the extension sees the arguments and results of a kernel call, on
// both targets: the one-byte type codes whose string keys a dispatcher's
// table of kernels and spells the signature a new combination is compiled
// for, the slot the entry point reads, NumPy dtypes as plait's, the layout a
// strided view is specialised on, and the conversion of scalar results.
#pragma once

#include <nanobind/nanobind.h>

#include "numpy_api.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/types.h"
#include "runtime/abi.h"

namespace plait::python {

// Every argument gets a one-byte type code; the codes of all arguments form
// the key of the dispatcher's kernel table. The dtype (below 16) is the low
// four bits of both kinds of code.
//   scalar: (weak << 4) | dtype                                  (0 ... 31)
//   array:  kArrayBase + (((layout * 4 + ndim - 1) << 4) | dtype)  (32 ... 223)
constexpr uint8_t kArrayBase = 0x20;
constexpr uint8_t kWeakBit = 0x10;
// Not a type code: a sparse matrix argument, whose call goes through the
// dispatcher's Python method _call_sparse (the CPU classification returns
// it where a throw would cost a microsecond or two per call).
constexpr uint8_t kSparseArgument = 0xFF;
static_assert(plait::kNumScalarKinds <= 16 && kArrayBase % 16 == 0);

inline uint8_t scalar_code(int dtype, bool weak) {
  return static_cast<uint8_t>((weak ? kWeakBit : 0) | dtype);
}
inline uint8_t array_code(int dtype, int ndim, plait::Layout layout) {
  return static_cast<uint8_t>(kArrayBase + (((static_cast<int>(layout) * 4 + ndim - 1) << 4) | dtype));
}
inline bool is_array_code(uint8_t code) {
  return code >= kArrayBase;
}
inline int code_dtype(uint8_t code) {
  return code & 15;
}
inline int code_ndim(uint8_t code) {
  return (((code - kArrayBase) >> 4) & 3) + 1;
}

uint8_t encode(const plait::ValueType& type);
// The signature text of a key of type codes ("f64[:, ::1], int").
std::string signature_of(const std::string& key);

// One argument as the entry point reads it.
struct ArgSlot {
  union {
    plait_array array;
    int64_t i64;
    double f64;
    int32_t b;
  };
};

// "bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32
// and float64": the element types kernels take, as messages name them.
extern const char* const kElementTypeNames;

// The plait dtype of a NumPy dtype, or -1 when kernels do not take it.
int dtype_code(const PyArray_Descr* descr);
// The NumPy type number and item size of a plait dtype.
int numpy_type(int dtype);
npy_intp item_size(int dtype);
// Reads a value of `dtype` (a NumPy scalar's or 0-d array's) from memory.
void read_scalar(const void* data, int dtype, ArgSlot& slot);

// The layout a kernel is specialised on for an array that is C-contiguous
// and/or Fortran-contiguous: C first (a 1-D contiguous array is both), F
// from 2 dimensions on, else Any (strided).
inline plait::Layout contiguous_layout(bool c_contiguous, bool f_contiguous, int ndim) {
  if (c_contiguous) return plait::Layout::C;
  return f_contiguous && ndim >= 2 ? plait::Layout::F : plait::Layout::Any;
}
// Whether element strides are those of C order (or of Fortran order), the
// strides of extents of 1 not counting. NumPy's contiguity flags follow the
// same rule, and also call every empty array contiguous.
bool follows_order(int ndim, const int64_t* shape, const int64_t* strides, bool fortran);
// Writes the element strides of layout C (or F) of `shape`: kernels
// specialised on C or F assume them, where an extent of 1 may have had any
// stride.
void write_canonical_strides(plait::Layout layout, int ndim, const int64_t* shape, int64_t* strides);

// A scalar result as a Python object (a Python number when weak, else a
// NumPy scalar); null with the Python error set on failure.
PyObject* scalar_result(const plait_result& r, const plait::ScalarType& type);
// Releases the owned buffers of results that do not reach Python.
void release_results(plait_result* results, size_t count);

}  // namespace plait::python
