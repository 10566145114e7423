// Arguments and results of kernel calls, shared by both targets
// (argument_types.h).
#include "argument_types.h"

#include <cstring>

namespace plait::python {

namespace {

plait::ValueType decode(uint8_t code) {
  if (is_array_code(code)) {
    plait::ArrayType array;
    array.dtype = static_cast<plait::ScalarKind>(code_dtype(code));
    array.ndim = code_ndim(code);
    array.layout = static_cast<plait::Layout>((code - kArrayBase) >> 6);
    return plait::ValueType::of(array);
  }
  return plait::ValueType::of(
      plait::ScalarType{static_cast<plait::ScalarKind>(code_dtype(code)), (code & kWeakBit) != 0});
}

}  // namespace

uint8_t encode(const plait::ValueType& type) {
  if (type.is_array()) return array_code(static_cast<int>(type.array.dtype), type.array.ndim, type.array.layout);
  return scalar_code(static_cast<int>(type.scalar.kind), type.scalar.weak);
}

std::string signature_of(const std::string& key) {
  plait::Signature signature;
  for (char c : key) signature.args.push_back(decode(static_cast<uint8_t>(c)));
  return signature.to_string();
}

const char* const kElementTypeNames =
    "bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32 and float64";

int dtype_code(const PyArray_Descr* descr) {
  if (!PyArray_ISNBO(descr->byteorder)) return -1;
  const npy_intp size = PyDataType_ELSIZE(descr);
  // The C integer types behind NumPy's type numbers vary in size between
  // platforms; the item size says which plait dtype they are.
  auto sized = [size](int d8, int d16, int d32, int d64) {
    return size == 1 ? d8 : size == 2 ? d16 : size == 4 ? d32 : size == 8 ? d64 : -1;
  };
  switch (descr->type_num) {
    case NPY_BOOL:
      return PLAIT_BOOL;
    case NPY_BYTE:
    case NPY_SHORT:
    case NPY_INT:
    case NPY_LONG:
    case NPY_LONGLONG:
      return sized(PLAIT_INT8, PLAIT_INT16, PLAIT_INT32, PLAIT_INT64);
    case NPY_UBYTE:
    case NPY_USHORT:
    case NPY_UINT:
    case NPY_ULONG:
    case NPY_ULONGLONG:
      return sized(PLAIT_UINT8, PLAIT_UINT16, PLAIT_UINT32, PLAIT_UINT64);
    case NPY_FLOAT:
      return PLAIT_FLOAT32;
    case NPY_DOUBLE:
      return PLAIT_FLOAT64;
    default:
      return -1;
  }
}

int numpy_type(int dtype) {
  switch (dtype) {
    case PLAIT_BOOL:
      return NPY_BOOL;
    case PLAIT_INT8:
      return NPY_INT8;
    case PLAIT_INT16:
      return NPY_INT16;
    case PLAIT_INT32:
      return NPY_INT32;
    case PLAIT_INT64:
      return NPY_INT64;
    case PLAIT_UINT8:
      return NPY_UINT8;
    case PLAIT_UINT16:
      return NPY_UINT16;
    case PLAIT_UINT32:
      return NPY_UINT32;
    case PLAIT_UINT64:
      return NPY_UINT64;
    case PLAIT_FLOAT32:
      return NPY_FLOAT32;
    default:
      return NPY_FLOAT64;
  }
}

npy_intp item_size(int dtype) {
  return plait::ScalarType{static_cast<plait::ScalarKind>(dtype), false}.bits() / 8;
}

void read_scalar(const void* data, int dtype, ArgSlot& slot) {
  switch (dtype) {
    case PLAIT_BOOL:
      slot.b = *static_cast<const npy_bool*>(data) != 0;
      break;
    case PLAIT_INT8:
      slot.i64 = *static_cast<const int8_t*>(data);
      break;
    case PLAIT_INT16:
      slot.i64 = *static_cast<const int16_t*>(data);
      break;
    case PLAIT_INT32:
      slot.i64 = *static_cast<const int32_t*>(data);
      break;
    case PLAIT_INT64:
      slot.i64 = *static_cast<const int64_t*>(data);
      break;
    case PLAIT_UINT8:
      slot.i64 = *static_cast<const uint8_t*>(data);
      break;
    case PLAIT_UINT16:
      slot.i64 = *static_cast<const uint16_t*>(data);
      break;
    case PLAIT_UINT32:
      slot.i64 = *static_cast<const uint32_t*>(data);
      break;
    case PLAIT_UINT64:
      slot.i64 = static_cast<int64_t>(*static_cast<const uint64_t*>(data));
      break;
    case PLAIT_FLOAT32:
      slot.f64 = *static_cast<const float*>(data);
      break;
    default:
      slot.f64 = *static_cast<const double*>(data);
      break;
  }
}

bool follows_order(int ndim, const int64_t* shape, const int64_t* strides, bool fortran) {
  int64_t step = 1;
  for (int i = 0; i < ndim; ++i) {
    const int k = fortran ? i : ndim - 1 - i;
    if (shape[k] != 1 && strides[k] != step) return false;
    step *= shape[k];
  }
  return true;
}

void write_canonical_strides(plait::Layout layout, int ndim, const int64_t* shape, int64_t* strides) {
  int64_t step = 1;
  for (int i = 0; i < ndim; ++i) {
    const int k = layout == plait::Layout::F ? i : ndim - 1 - i;
    strides[k] = step;
    step *= shape[k];
  }
}

PyObject* scalar_result(const plait_result& r, const plait::ScalarType& type) {
  const int dtype = static_cast<int>(type.kind);
  if (type.weak) {
    switch (dtype) {
      case PLAIT_BOOL:
        return PyBool_FromLong(r.b);
      case PLAIT_INT64:
        return PyLong_FromLongLong(r.i64);
      default:
        return PyFloat_FromDouble(r.f64);
    }
  }
  if (dtype == PLAIT_BOOL) {
    PyObject* value = r.b ? PyArrayScalar_True : PyArrayScalar_False;
    Py_INCREF(value);
    return value;
  }
  alignas(8) unsigned char value[8];
  if (type.is_int()) {
    // Little-endian: the low bytes of the widened value are the narrower one.
    static_assert(NPY_BYTE_ORDER == NPY_LITTLE_ENDIAN);
    std::memcpy(value, &r.i64, 8);
  } else if (dtype == PLAIT_FLOAT32) {
    const float v = static_cast<float>(r.f64);
    std::memcpy(value, &v, 4);
  } else {
    std::memcpy(value, &r.f64, 8);
  }
  PyArray_Descr* descr = PyArray_DescrFromType(numpy_type(dtype));
  PyObject* scalar = PyArray_Scalar(value, descr, nullptr);
  Py_DECREF(descr);
  return scalar;
}

void release_results(plait_result* results, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (results[i].owner != nullptr && results[i].release != nullptr) results[i].release(results[i].owner);
    results[i].owner = nullptr;
  }
}

}  // namespace plait::python
