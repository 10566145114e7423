// The extension module plait._core: compiles kernels through the C++ core and
// calls them. The per-call path (argument classification, kernel lookup, the
// entry call and the conversion of results) runs here, on the NumPy C API,
// because it decides the call overhead of every cached kernel.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#define NPY_NO_DEPRECATED_API NPY_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "driver/compiler.h"
#include "ir/types.h"
#include "jit/cuda_runtime.h"
#include "jit/disk_cache.h"
#include "jit/host_memory.h"
#include "runtime/abi.h"
#include "support/compiler_stack.h"
#include "support/diagnostics.h"

#include "compile_bindings.h"
#include "cuda_bindings.h"
#include "kernel_object.h"
#include "module_errors.h"

namespace nb = nanobind;
using namespace nb::literals;
using namespace plait::python;

namespace {
// ---------------------------------------------------------------------------
// Argument classification.
//
// Every argument gets a one-byte type code; the codes of all arguments form
// the key of the dispatcher's kernel table. The dtype (below 16) is the low
// four bits of both kinds of code.
//   scalar: (weak << 4) | dtype                                  (0 ... 31)
//   array:  kArrayBase + (((layout * 4 + ndim - 1) << 4) | dtype)  (32 ... 223)

constexpr uint8_t kArrayBase = 0x20;
constexpr uint8_t kWeakBit = 0x10;
static_assert(plait::kNumScalarKinds <= 16 && kArrayBase % 16 == 0);

uint8_t scalar_code(int dtype, bool weak) { return static_cast<uint8_t>((weak ? kWeakBit : 0) | dtype); }
uint8_t array_code(int dtype, int ndim, plait::Layout layout) {
  return static_cast<uint8_t>(kArrayBase + (((static_cast<int>(layout) * 4 + ndim - 1) << 4) | dtype));
}
bool is_array_code(uint8_t code) { return code >= kArrayBase; }
int code_dtype(uint8_t code) { return code & 15; }
int code_ndim(uint8_t code) { return (((code - kArrayBase) >> 4) & 3) + 1; }

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

uint8_t encode(const plait::ValueType& type) {
  if (type.is_array()) return array_code(static_cast<int>(type.array.dtype), type.array.ndim, type.array.layout);
  return scalar_code(static_cast<int>(type.scalar.kind), type.scalar.weak);
}

std::string signature_of(const std::string& key) {
  plait::Signature signature;
  for (char c : key) signature.args.push_back(decode(static_cast<uint8_t>(c)));
  return signature.to_string();
}

// One argument as the entry point reads it.
struct ArgSlot {
  union {
    plait_array array;
    int64_t i64;
    double f64;
    int32_t b;
  };
};

// The plait dtype of a NumPy dtype, or -1 when kernels do not take it.
int dtype_code(const PyArray_Descr* descr) {
  if (!PyArray_ISNBO(descr->byteorder)) return -1;
  const npy_intp size = PyDataType_ELSIZE(descr);
  // The C integer types behind NumPy's type numbers vary in size between
  // platforms; the item size says which plait dtype they are.
  auto sized = [size](int d8, int d16, int d32, int d64) {
    return size == 1 ? d8 : size == 2 ? d16 : size == 4 ? d32 : size == 8 ? d64 : -1;
  };
  switch (descr->type_num) {
    case NPY_BOOL: return PLAIT_BOOL;
    case NPY_BYTE:
    case NPY_SHORT:
    case NPY_INT:
    case NPY_LONG:
    case NPY_LONGLONG: return sized(PLAIT_INT8, PLAIT_INT16, PLAIT_INT32, PLAIT_INT64);
    case NPY_UBYTE:
    case NPY_USHORT:
    case NPY_UINT:
    case NPY_ULONG:
    case NPY_ULONGLONG: return sized(PLAIT_UINT8, PLAIT_UINT16, PLAIT_UINT32, PLAIT_UINT64);
    case NPY_FLOAT: return PLAIT_FLOAT32;
    case NPY_DOUBLE: return PLAIT_FLOAT64;
    default: return -1;
  }
}

// Reads a 0-d array or NumPy scalar value of `dtype` from memory.
void read_scalar(const void* data, int dtype, ArgSlot& slot) {
  switch (dtype) {
    case PLAIT_BOOL: slot.b = *static_cast<const npy_bool*>(data) != 0; break;
    case PLAIT_INT8: slot.i64 = *static_cast<const int8_t*>(data); break;
    case PLAIT_INT16: slot.i64 = *static_cast<const int16_t*>(data); break;
    case PLAIT_INT32: slot.i64 = *static_cast<const int32_t*>(data); break;
    case PLAIT_INT64: slot.i64 = *static_cast<const int64_t*>(data); break;
    case PLAIT_UINT8: slot.i64 = *static_cast<const uint8_t*>(data); break;
    case PLAIT_UINT16: slot.i64 = *static_cast<const uint16_t*>(data); break;
    case PLAIT_UINT32: slot.i64 = *static_cast<const uint32_t*>(data); break;
    case PLAIT_UINT64: slot.i64 = static_cast<int64_t>(*static_cast<const uint64_t*>(data)); break;
    case PLAIT_FLOAT32: slot.f64 = *static_cast<const float*>(data); break;
    default: slot.f64 = *static_cast<const double*>(data); break;
  }
}

struct Dispatcher;
[[noreturn]] void raise_argument_error(const Dispatcher& d, size_t index, PyObject* obj, const char* why);

struct Dispatcher {
  std::string name;
  std::string path;
  std::vector<std::string> params;
  int32_t num_threads = 1;
  std::unordered_map<std::string, KernelPtr> table;

  // Classifies argument `index`; returns its type code and fills `slot`.
  // Sets `guarded` when the argument is an array that a write must not reach
  // (read-only, or a zero stride over more than one element), so that the
  // call checks it against what the kernel writes (check_writes).
  uint8_t classify(size_t index, PyObject* obj, ArgSlot& slot, bool& guarded) const;
};

[[noreturn]] void raise_argument_error(const Dispatcher& d, size_t index, PyObject* obj, const char* why) {
  const std::string param = index < d.params.size() ? d.params[index] : std::to_string(index);
  std::string message = d.name + "() argument '" + param + "' ";
  if (why != nullptr) {
    message += why;
  } else {
    message += "has unsupported type '";
    message += Py_TYPE(obj)->tp_name;
    message += "'; plait kernels take NumPy arrays (bool, int8 to int64, uint8 to uint64, float32, float64; up to "
               "4 dimensions) and bool, int or float scalars";
  }
  PyErr_SetString(PyExc_TypeError, message.c_str());
  throw nb::python_error();
}

constexpr uint8_t kBadCode = 0xff;

// np.ma.MaskedArray, imported on the first argument that is a subclass of
// ndarray (plain arrays never pay for it). Held for the process's lifetime.
PyObject* g_masked_array_type = nullptr;

bool is_masked_array(PyObject* obj) {
  if (g_masked_array_type == nullptr) {
    PyObject* module = PyImport_ImportModule("numpy.ma");
    if (module == nullptr) throw nb::python_error();
    PyObject* type = PyObject_GetAttrString(module, "MaskedArray");
    Py_DECREF(module);
    if (type == nullptr) throw nb::python_error();
    if (g_masked_array_type == nullptr) {
      g_masked_array_type = type;
    } else {
      Py_DECREF(type);  // another thread imported it while the import released the GIL
    }
  }
  const int found = PyObject_IsInstance(obj, g_masked_array_type);
  if (found < 0) throw nb::python_error();
  return found == 1;
}

uint8_t Dispatcher::classify(size_t index, PyObject* obj, ArgSlot& slot, bool& guarded) const {
  if (PyArray_Check(obj)) {
    if (Py_TYPE(obj) != &PyArray_Type && is_masked_array(obj)) {
      raise_argument_error(*this, index, obj,
                           "is a masked array (numpy.ma.MaskedArray); plait kernels would ignore its mask: pass "
                           "its .data, or .filled(value)");
    }
    PyArrayObject* array = reinterpret_cast<PyArrayObject*>(obj);
    const int dtype = dtype_code(PyArray_DESCR(array));
    if (dtype < 0) {
      std::string why = "has unsupported dtype '";
      nb::str dtype_name = nb::str(nb::handle(reinterpret_cast<PyObject*>(PyArray_DESCR(array))));
      why += dtype_name.c_str();
      why += "'; plait kernels take bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32 and float64 "
             "arrays";
      raise_argument_error(*this, index, obj, why.c_str());
    }
    const int ndim = PyArray_NDIM(array);
    if (ndim == 0) {
      read_scalar(PyArray_DATA(array), dtype, slot);
      return scalar_code(dtype, false);
    }
    if (ndim > PLAIT_MAX_NDIM) {
      raise_argument_error(*this, index, obj,
                           ("is a " + std::to_string(ndim) + "-D array; plait kernels take arrays of up to 4 dimensions")
                               .c_str());
    }
    const int flags = PyArray_FLAGS(array);
    if (!(flags & NPY_ARRAY_ALIGNED)) raise_argument_error(*this, index, obj, "is not aligned to its item size");
    if (!(flags & NPY_ARRAY_WRITEABLE)) guarded = true;
    const npy_intp* shape = PyArray_DIMS(array);
    plait_array& out = slot.array;
    out.data = PyArray_DATA(array);
    for (int k = 0; k < ndim; ++k) out.shape[k] = shape[k];
    // Contiguous arrays get canonical strides: NumPy leaves the stride of a
    // dimension of extent 1 arbitrary, and kernels specialised on C or F
    // assume the canonical ones.
    plait::Layout layout;
    if (flags & NPY_ARRAY_C_CONTIGUOUS) {
      layout = plait::Layout::C;
      int64_t stride = 1;
      for (int k = ndim - 1; k >= 0; --k) {
        out.strides[k] = stride;
        stride *= shape[k];
      }
    } else if (ndim >= 2 && (flags & NPY_ARRAY_F_CONTIGUOUS)) {
      layout = plait::Layout::F;
      int64_t stride = 1;
      for (int k = 0; k < ndim; ++k) {
        out.strides[k] = stride;
        stride *= shape[k];
      }
    } else {
      layout = plait::Layout::Any;
      const npy_intp itemsize = PyArray_ITEMSIZE(array);
      const npy_intp* strides = PyArray_STRIDES(array);
      for (int k = 0; k < ndim; ++k) {
        if (strides[k] % itemsize != 0) {
          raise_argument_error(*this, index, obj,
                               ("has a byte stride of " + std::to_string(strides[k]) +
                                " that is not a multiple of its item size " + std::to_string(itemsize))
                                   .c_str());
        }
        out.strides[k] = strides[k] / itemsize;
        // Contiguous arrays cannot repeat an element; broadcast views can.
        if (strides[k] == 0 && shape[k] > 1) guarded = true;
      }
    }
    return array_code(dtype, ndim, layout);
  }
  if (PyFloat_CheckExact(obj)) {
    slot.f64 = PyFloat_AS_DOUBLE(obj);
    return scalar_code(PLAIT_FLOAT64, true);
  }
  if (PyLong_CheckExact(obj)) {
    int overflow = 0;
    slot.i64 = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow != 0) raise_argument_error(*this, index, obj, "is a Python int that does not fit in int64");
    return scalar_code(PLAIT_INT64, true);
  }
  if (PyBool_Check(obj)) {
    slot.b = obj == Py_True;
    return scalar_code(PLAIT_BOOL, true);
  }
  if (PyArray_IsScalar(obj, Generic)) {
    PyArray_Descr* descr = PyArray_DescrFromScalar(obj);
    const int dtype = dtype_code(descr);
    if (dtype < 0) {
      Py_DECREF(descr);
      raise_argument_error(*this, index, obj, nullptr);
    }
    alignas(16) unsigned char value[16];
    PyArray_ScalarAsCtype(obj, value);
    Py_DECREF(descr);
    read_scalar(value, dtype, slot);
    return scalar_code(dtype, false);
  }
  // Subclasses of int and float (IntEnum, ...) pass as Python scalars.
  if (PyLong_Check(obj)) {
    int overflow = 0;
    slot.i64 = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow != 0) raise_argument_error(*this, index, obj, "is a Python int that does not fit in int64");
    return scalar_code(PLAIT_INT64, true);
  }
  if (PyFloat_Check(obj)) {
    slot.f64 = PyFloat_AS_DOUBLE(obj);
    return scalar_code(PLAIT_FLOAT64, true);
  }
  raise_argument_error(*this, index, obj, nullptr);
}

// ---------------------------------------------------------------------------
// Results.

// Keeps a kernel-owned buffer alive for as long as the NumPy array viewing
// it, and the kernel's library loaded until the buffer is released.
struct OwnedBuffer {
  void* owner;
  void (*release)(void*);
  KernelPtr kernel;
};

void release_owned_buffer(PyObject* capsule) {
  auto* buffer = static_cast<OwnedBuffer*>(PyCapsule_GetPointer(capsule, "plait.buffer"));
  if (buffer == nullptr) {
    PyErr_Clear();
    return;
  }
  if (buffer->release != nullptr) buffer->release(buffer->owner);
  delete buffer;
}

int numpy_type(int dtype) {
  switch (dtype) {
    case PLAIT_BOOL: return NPY_BOOL;
    case PLAIT_INT8: return NPY_INT8;
    case PLAIT_INT16: return NPY_INT16;
    case PLAIT_INT32: return NPY_INT32;
    case PLAIT_INT64: return NPY_INT64;
    case PLAIT_UINT8: return NPY_UINT8;
    case PLAIT_UINT16: return NPY_UINT16;
    case PLAIT_UINT32: return NPY_UINT32;
    case PLAIT_UINT64: return NPY_UINT64;
    case PLAIT_FLOAT32: return NPY_FLOAT32;
    default: return NPY_FLOAT64;
  }
}

npy_intp item_size(int dtype) {
  return plait::ScalarType{static_cast<plait::ScalarKind>(dtype), false}.bits() / 8;
}

PyObject* scalar_result(const plait_result& r, const plait::ScalarType& type) {
  const int dtype = static_cast<int>(type.kind);
  if (type.weak) {
    switch (dtype) {
      case PLAIT_BOOL: return PyBool_FromLong(r.b);
      case PLAIT_INT64: return PyLong_FromLongLong(r.i64);
      default: return PyFloat_FromDouble(r.f64);
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

bool same_view(const plait_array& a, const plait_array& b, int ndim) {
  if (a.data != b.data) return false;
  for (int k = 0; k < ndim; ++k) {
    if (a.shape[k] != b.shape[k]) return false;
    if (a.shape[k] > 1 && a.strides[k] != b.strides[k]) return false;
  }
  return true;
}

// The byte range [lo, hi) an array view touches; empty for empty arrays.
void byte_span(const plait_array& a, int ndim, npy_intp itemsize, const char*& lo, const char*& hi) {
  lo = hi = static_cast<const char*>(a.data);
  npy_intp low = 0, high = 0;
  for (int k = 0; k < ndim; ++k) {
    if (a.shape[k] == 0) return;
    const npy_intp extent = (a.shape[k] - 1) * a.strides[k] * itemsize;
    (extent < 0 ? low : high) += extent;
  }
  lo += low;
  hi += high + itemsize;
}

PyObject* wrap_array(const plait_array& a, int ndim, int dtype, int flags, PyObject* base) {
  npy_intp shape[PLAIT_MAX_NDIM];
  npy_intp strides[PLAIT_MAX_NDIM];
  const npy_intp itemsize = item_size(dtype);
  for (int k = 0; k < ndim; ++k) {
    shape[k] = a.shape[k];
    strides[k] = a.strides[k] * itemsize;
  }
  PyArray_Descr* descr = PyArray_DescrFromType(numpy_type(dtype));  // stolen below
  PyObject* array = PyArray_NewFromDescr(&PyArray_Type, descr, ndim, shape, strides, a.data, flags, nullptr);
  if (array == nullptr) return nullptr;
  if (base != nullptr && PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(array), base) < 0) {
    Py_DECREF(array);
    return nullptr;
  }
  return array;
}

struct CallState {
  PyObject* const* args;
  const ArgSlot* slots;
  const uint8_t* codes;
  size_t nargs;
};

// Converts an array result. Takes over the result's owner (released exactly
// once, through the array's base capsule or here on failure).
PyObject* array_result(plait_result& r, const plait::ArrayType& type, const KernelPtr& kernel,
                       const CallState& call) {
  const int dtype = static_cast<int>(type.dtype);
  const int ndim = type.ndim;
  if (r.owner == nullptr) {
    // A borrowed result: an argument itself or a view into one.
    for (size_t i = 0; i < call.nargs; ++i) {
      if (!is_array_code(call.codes[i]) || code_dtype(call.codes[i]) != dtype) continue;
      const int arg_ndim = code_ndim(call.codes[i]);
      if (arg_ndim == ndim && same_view(call.slots[i].array, r.array, ndim)) {
        Py_INCREF(call.args[i]);
        return call.args[i];
      }
    }
    const npy_intp itemsize = item_size(dtype);
    const char* lo;
    const char* hi;
    byte_span(r.array, ndim, itemsize, lo, hi);
    if (lo != hi) {
      for (size_t i = 0; i < call.nargs; ++i) {
        if (!is_array_code(call.codes[i])) continue;
        PyArrayObject* arg = reinterpret_cast<PyArrayObject*>(call.args[i]);
        const char* arg_lo;
        const char* arg_hi;
        byte_span(call.slots[i].array, code_ndim(call.codes[i]), PyArray_ITEMSIZE(arg), arg_lo, arg_hi);
        if (arg_lo <= lo && hi <= arg_hi) {
          Py_INCREF(call.args[i]);
          return wrap_array(r.array, ndim, dtype, PyArray_FLAGS(arg) & NPY_ARRAY_WRITEABLE, call.args[i]);
        }
      }
    }
    // Not inside any argument (an empty array): a copy owns its memory.
    PyObject* view = wrap_array(r.array, ndim, dtype, 0, nullptr);
    if (view == nullptr) return nullptr;
    PyObject* copy = PyArray_NewCopy(reinterpret_cast<PyArrayObject*>(view), NPY_CORDER);
    Py_DECREF(view);
    return copy;
  }
  auto* buffer = new OwnedBuffer{r.owner, r.release, kernel};
  r.owner = nullptr;
  PyObject* capsule = PyCapsule_New(buffer, "plait.buffer", release_owned_buffer);
  if (capsule == nullptr) {
    if (buffer->release != nullptr) buffer->release(buffer->owner);
    delete buffer;
    return nullptr;
  }
  return wrap_array(r.array, ndim, dtype, NPY_ARRAY_WRITEABLE, capsule);  // steals the capsule, even on failure
}

void release_results(plait_result* results, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (results[i].owner != nullptr && results[i].release != nullptr) results[i].release(results[i].owner);
    results[i].owner = nullptr;
  }
}

// Builds the Python results of one call; releases every owned result that
// does not end up in a Python object.
PyObject* build_results(plait_result* results, const KernelPtr& kernel, const CallState& call) {
  const size_t count = kernel->results.size();
  if (count == 0) {
    if (kernel->returns_list) return PyList_New(0);
    if (kernel->returns_tuple) return PyTuple_New(0);
    Py_RETURN_NONE;
  }
  PyObject* values[16];
  std::vector<PyObject*> many;
  PyObject** out = values;
  if (count > 16) {
    many.resize(count);
    out = many.data();
  }
  for (size_t i = 0; i < count; ++i) {
    const plait::ValueType& type = kernel->results[i];
    PyObject* value = nullptr;
    // A result repeating an earlier owned one (`return a, a`) is that same object.
    if (type.is_array() && results[i].owner != nullptr) {
      for (size_t j = 0; j < i && value == nullptr; ++j) {
        if (results[j].is_array && out[j] != nullptr && PyArray_Check(out[j]) &&
            PyArray_DATA(reinterpret_cast<PyArrayObject*>(out[j])) == results[i].array.data &&
            kernel->results[j] == type && same_view(results[j].array, results[i].array, type.array.ndim)) {
          value = out[j];
          Py_INCREF(value);
          results[i].release(results[i].owner);
          results[i].owner = nullptr;
        }
      }
    }
    if (value == nullptr) {
      value = type.is_array() ? array_result(results[i], type.array, kernel, call) : scalar_result(results[i], type.scalar);
    }
    if (value == nullptr) {
      for (size_t j = 0; j < i; ++j) Py_DECREF(out[j]);
      release_results(results + i, count - i);
      return nullptr;
    }
    out[i] = value;
  }
  if (!kernel->returns_tuple) return out[0];
  const bool list = kernel->returns_list;
  PyObject* sequence = list ? PyList_New(static_cast<Py_ssize_t>(count)) : PyTuple_New(static_cast<Py_ssize_t>(count));
  if (sequence == nullptr) {
    for (size_t i = 0; i < count; ++i) Py_DECREF(out[i]);
    return nullptr;
  }
  for (size_t i = 0; i < count; ++i) {
    if (list) {
      PyList_SET_ITEM(sequence, static_cast<Py_ssize_t>(i), out[i]);
    } else {
      PyTuple_SET_ITEM(sequence, static_cast<Py_ssize_t>(i), out[i]);
    }
  }
  return sequence;
}

// ---------------------------------------------------------------------------
// The call path: Dispatcher.__call__ as a tp_call slot.

// Raises ValueError for an argument the kernel writes that is read-only or
// repeats elements (a zero stride over an extent above 1: one store would
// change several elements, as NumPy refuses for broadcast views). Runs only
// when classify flagged such an argument.
void check_writes(const Dispatcher& d, const plait::CompiledKernel& kernel, PyObject* const* args,
                  const std::string& key) {
  for (size_t i = 0; i < key.size() && i < kernel.writes_param.size(); ++i) {
    if (!kernel.writes_param[i] || !is_array_code(static_cast<uint8_t>(key[i]))) continue;
    PyArrayObject* array = reinterpret_cast<PyArrayObject*>(args[i]);
    const std::string param = i < d.params.size() ? d.params[i] : std::to_string(i);
    const std::string what =
        "plait kernel " + d.name + ": argument '" + param + "' (parameter " + std::to_string(i + 1) + ") ";
    if (!(PyArray_FLAGS(array) & NPY_ARRAY_WRITEABLE)) {
      const std::string message = "assignment destination is read-only: " + what +
                                  "is read-only, and the kernel writes it (pass a writable copy, e.g. " + param +
                                  ".copy())";
      PyErr_SetString(PyExc_ValueError, message.c_str());
      throw nb::python_error();
    }
    // An empty array repeats nothing (NumPy gives it zero strides).
    for (int k = 0; k < PyArray_NDIM(array) && PyArray_SIZE(array) > 0; ++k) {
      if (PyArray_STRIDES(array)[k] == 0 && PyArray_DIMS(array)[k] > 1) {
        const std::string message = what + "has a zero stride in dimension " + std::to_string(k) +
                                    ", so several of its elements share memory, and the kernel writes it (pass a "
                                    "copy, e.g. " +
                                    param + ".copy())";
        PyErr_SetString(PyExc_ValueError, message.c_str());
        throw nb::python_error();
      }
    }
  }
}

constexpr size_t kInlineArgs = 16;

PyObject* call_kernel(Dispatcher& d, PyObject* self, PyObject* args_tuple) {
  const size_t nargs = static_cast<size_t>(PyTuple_GET_SIZE(args_tuple));
  PyObject* const* args = &PyTuple_GET_ITEM(args_tuple, 0);

  ArgSlot inline_slots[kInlineArgs];
  void* inline_pointers[kInlineArgs];
  std::vector<ArgSlot> heap_slots;
  std::vector<void*> heap_pointers;
  ArgSlot* slots = inline_slots;
  void** pointers = inline_pointers;
  if (nargs > kInlineArgs) {
    heap_slots.resize(nargs);
    heap_pointers.resize(nargs);
    slots = heap_slots.data();
    pointers = heap_pointers.data();
  }
  std::string key(nargs, '\0');
  bool guarded = false;
  for (size_t i = 0; i < nargs; ++i) {
    key[i] = static_cast<char>(d.classify(i, args[i], slots[i], guarded));
    pointers[i] = &slots[i];
  }

  auto found = d.table.find(key);
  if (found == d.table.end()) {
    // A new signature: Python compiles it (plait/dispatcher.py).
    nb::object kernel = nb::borrow(self).attr("_compile")(signature_of(key));
    found = d.table.emplace(key, nb::cast<Kernel&>(kernel).compiled).first;
  }
  const KernelPtr& kernel = found->second;
  if (guarded) check_writes(d, *kernel, args, key);

  const size_t nresults = kernel->results.size();
  plait_result inline_results[4];
  std::vector<plait_result> heap_results;
  plait_result* results = inline_results;
  if (nresults > 4) {
    heap_results.resize(nresults);
    results = heap_results.data();
  }
  std::memset(results, 0, sizeof(plait_result) * (nresults > 4 ? nresults : 4));

  plait_context ctx;
  ctx.num_threads = d.num_threads;
  ctx.parallel_work_threshold = parallel_work_threshold();
  ctx.error_kind = PLAIT_OK;
  ctx.error_line = 0;
  ctx.error_col = 0;
  ctx.error_message[0] = '\0';
  ctx.error_iteration = -1;
  ctx.cuda = nullptr;
  ctx.memory = plait::jit::host_memory_pool();
  ctx.interrupt = &g_interrupt;
  // Cleared, then Python's pending signals handled: a SIGINT that came
  // before this point tripped Python's flag too, and its handler raises now
  // (as Python would at its next bytecode) rather than being lost while the
  // kernel runs; one that comes later stops the kernel through our flag.
  g_interrupt = 0;
  if (PyErr_CheckSignals() != 0) return nullptr;

  int32_t status;
  {
    PyThreadState* thread_state = PyEval_SaveThread();
    status = kernel->entry(pointers, results, &ctx);
    PyEval_RestoreThread(thread_state);
  }
  if (status != PLAIT_OK) {
    release_results(results, nresults);
    set_kernel_error(status, ctx, kernel->python_source);
    return nullptr;
  }
  const CallState call{args, slots, reinterpret_cast<const uint8_t*>(key.data()), nargs};
  return build_results(results, kernel, call);
}

PyObject* dispatcher_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  if (!nb::inst_ready(self)) {
    PyErr_SetString(PyExc_RuntimeError, "plait dispatcher used before its __init__ ran");
    return nullptr;
  }
  Dispatcher& d = *nb::inst_ptr<Dispatcher>(self);
  try {
    if (static_cast<size_t>(PyTuple_GET_SIZE(args)) == d.params.size() &&
        (kwargs == nullptr || PyDict_GET_SIZE(kwargs) == 0)) {
      return call_kernel(d, self, args);
    }
    // Keywords or defaults: Python binds the call to the full argument list.
    nb::object bound = nb::borrow(self).attr("_bind")(nb::handle(args),
                                                       kwargs ? nb::handle(kwargs) : nb::handle(Py_None));
    if (!PyTuple_Check(bound.ptr()) || static_cast<size_t>(PyTuple_GET_SIZE(bound.ptr())) != d.params.size()) {
      PyErr_SetString(PyExc_RuntimeError, "plait dispatcher: _bind returned a wrong argument tuple");
      return nullptr;
    }
    return call_kernel(d, self, bound.ptr());
  } catch (nb::python_error& e) {
    e.restore();
    return nullptr;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

PyType_Slot dispatcher_slots[] = {{Py_tp_call, reinterpret_cast<void*>(dispatcher_call)}, {0, nullptr}};

std::string signature_for(Dispatcher& d, nb::args args) {
  std::string key(args.size(), '\0');
  std::vector<ArgSlot> slots(args.size());
  bool guarded = false;
  for (size_t i = 0; i < args.size(); ++i) key[i] = static_cast<char>(d.classify(i, args[i].ptr(), slots[i], guarded));
  return signature_of(key);
}

// The CUDA target: a call of a CUDA kernel on arguments plait/cuda.py
// classified (device pointers, shapes, strides and scalars).
nb::object call_cuda(const Kernel& kernel, nb::list args, uintptr_t stream) {
  const plait::CompiledKernel& compiled = *kernel.compiled;
  const size_t nargs = compiled.signature.args.size();
  if (args.size() != nargs) throw nb::value_error("call_cuda: wrong number of arguments");
  std::vector<ArgSlot> slots(nargs);
  std::vector<void*> pointers(nargs);
  for (size_t i = 0; i < nargs; ++i) {
    const plait::ValueType& type = compiled.signature.args[i];
    ArgSlot& slot = slots[i];
    pointers[i] = &slot;
    if (type.is_array()) {
      nb::tuple view = nb::cast<nb::tuple>(args[i]);
      nb::tuple shape = nb::cast<nb::tuple>(view[1]);
      nb::tuple strides = nb::cast<nb::tuple>(view[2]);
      std::memset(&slot.array, 0, sizeof slot.array);
      slot.array.data = reinterpret_cast<void*>(nb::cast<uintptr_t>(view[0]));
      for (int k = 0; k < type.array.ndim; ++k) {
        slot.array.shape[k] = nb::cast<int64_t>(shape[static_cast<size_t>(k)]);
        slot.array.strides[k] = nb::cast<int64_t>(strides[static_cast<size_t>(k)]);
      }
    } else if (type.scalar.is_bool()) {
      slot.b = nb::cast<bool>(args[i]) ? 1 : 0;
    } else if (type.scalar.is_int()) {
      slot.i64 = nb::cast<int64_t>(args[i]);
    } else {
      slot.f64 = nb::cast<double>(args[i]);
    }
  }
  const size_t nresults = compiled.results.size();
  std::vector<plait_result> results(nresults > 0 ? nresults : 1);
  std::memset(results.data(), 0, sizeof(plait_result) * results.size());
  plait_context ctx;
  std::memset(&ctx, 0, sizeof ctx);
  ctx.num_threads = 1;
  ctx.parallel_work_threshold = parallel_work_threshold();
  ctx.interrupt = &g_interrupt;
  g_interrupt = 0;  // and Python's pending signals handled, as for the CPU
  if (PyErr_CheckSignals() != 0) throw nb::python_error();
  int32_t status = PLAIT_OK;
  try {
    nb::gil_scoped_release release;
    status = plait::jit::call_cuda_kernel(compiled, pointers.data(), results.data(), &ctx, stream);
  } catch (const std::exception& e) {
    release_results(results.data(), nresults);
    rethrow_as_python(e);
  }
  if (status != PLAIT_OK) {
    release_results(results.data(), nresults);
    set_kernel_error(status, ctx, compiled.python_source);
    throw nb::python_error();
  }
  nb::list out;
  for (size_t i = 0; i < nresults; ++i) {
    const plait::ValueType& type = compiled.results[i];
    plait_result& r = results[i];
    if (!type.is_array()) {
      PyObject* value = scalar_result(r, type.scalar);
      if (value == nullptr) {
        release_results(results.data() + i, nresults - i);
        throw nb::python_error();
      }
      out.append(nb::steal(value));
      continue;
    }
    nb::list shape, strides;
    size_t count = 1;
    for (int k = 0; k < type.array.ndim; ++k) {
      shape.append(r.array.shape[k]);
      strides.append(r.array.strides[k]);
      count *= static_cast<size_t>(r.array.shape[k]);
    }
    nb::object owner = nb::none();
    if (r.owner != nullptr) {
      auto buffer = std::make_unique<DeviceBuffer>();
      buffer->pointer = reinterpret_cast<uintptr_t>(r.array.data);
      buffer->nbytes = count * static_cast<size_t>(item_size(static_cast<int>(type.array.dtype)));
      buffer->owner = r.owner;
      buffer->release = r.release;
      buffer->kernel = kernel.compiled;
      r.owner = nullptr;
      owner = nb::cast(std::move(buffer));
    }
    out.append(nb::make_tuple(reinterpret_cast<uintptr_t>(r.array.data), nb::tuple(shape), nb::tuple(strides),
                              static_cast<int>(type.array.dtype), owner));
  }
  return nb::tuple(out);
}

int import_numpy() {
  import_array1(-1);
  return 0;
}

}  // namespace

NB_MODULE(_core, m) {
  if (import_numpy() < 0) throw nb::python_error();
  install_sigint_handler();
  m.doc() = "The Plait compiler core and the kernel call path";

  m.def("_set_error_classes", &set_error_classes, "by_kind"_a, "internal"_a,
        "Registers the Python classes raised for compile errors (plait/errors.py).");
  m.def("compiler_version", &plait::compiler_version);
  // Whether plait.jit checks indices unless told.
  m.attr("default_boundscheck") = plait::default_boundscheck;
  // The element types kernels take, by their dtype code (runtime/abi.h):
  // (NumPy's name, the signature's spelling), so that the Python package
  // keeps no table of its own.
  nb::list element_types;
  for (int code = PLAIT_BOOL; code <= PLAIT_FLOAT64; ++code) {
    PyArray_Descr* descr = PyArray_DescrFromType(numpy_type(code));
    if (descr == nullptr) throw nb::python_error();
    nb::object dtype = nb::steal(reinterpret_cast<PyObject*>(descr));
    element_types.append(nb::make_tuple(dtype.attr("name"),
                                        plait::to_string(plait::ScalarType{static_cast<plait::ScalarKind>(code), false})));
  }
  m.attr("element_types") = nb::tuple(element_types);
  m.def("_raise_compile_error", &raise_python_compile_error, "kind"_a, "message"_a, "path"_a, "text"_a, "first_line"_a,
        "line"_a, "col"_a, "end_col"_a,
        "Raises the CompileError class of `kind` (an ErrorKind name) at line, columns [col, end_col) (0-based) "
        "of the source text.");
  m.def(
      "host_memory_stats",
      []() {
        const plait::jit::HostMemoryStats stats = plait::jit::host_memory_stats();
        return nb::make_tuple(stats.free_blocks, stats.free_bytes, stats.budget_bytes);
      },
      "(free blocks, free bytes, budget in bytes) of the pool of large arrays' memory.");
  m.def("release_host_memory", &plait::jit::release_free_host_memory,
        "Gives the pool's free blocks back to the operating system.");
  m.def("compile", &compile, "path"_a, "text"_a, "first_line"_a, "name"_a, "signature"_a, "modules"_a,
        "constants"_a, "boundscheck"_a, "fastmath"_a, "disk_cache"_a, "cache_dir"_a, "dump_dir"_a, "cxx"_a,
        "target"_a = "cpu", "auto_simd"_a = false, "cuda_threads"_a = plait::CudaLaunchConfig{}.threads,
        "cuda_row_groups"_a = plait::CudaLaunchConfig{}.row_groups, "cuda_max_team"_a = 0,
        "Compiles one specialisation of a kernel and returns a Kernel.");
  m.def("lookup_record", &lookup_record, "key"_a, "cache_dir"_a,
        "The text of the disk cache's record `key` (64 hex digits), or None when it is missing or damaged "
        "(a damaged one is removed). cache_dir '' is the default cache directory.");
  m.def("store_record", &store_record, "key"_a, "text"_a, "cache_dir"_a,
        "Writes the disk cache's record `key` (64 hex digits), replacing an older one.");
  define_cuda_bindings(m);

  nb::class_<Kernel>(m, "Kernel")
      .def_prop_ro("name", [](const Kernel& k) { return k.compiled->name; })
      .def_prop_ro("signature", [](const Kernel& k) { return k.compiled->signature.to_string(); })
      .def_prop_ro("results",
                   [](const Kernel& k) {
                     std::vector<std::string> names;
                     for (const auto& t : k.compiled->results) names.push_back(plait::to_string(t));
                     return names;
                   })
      .def_prop_ro("returns_tuple", [](const Kernel& k) { return k.compiled->returns_tuple; })
      .def_prop_ro("returns_list", [](const Kernel& k) { return k.compiled->returns_list; })
      .def_prop_ro(
          "writes_param", [](const Kernel& k) { return k.compiled->writes_param; },
          "Per parameter: whether the kernel may write its elements.")
      .def_prop_ro("ir_text", [](const Kernel& k) { return k.compiled->ir_text; })
      .def_prop_ro("source", [](const Kernel& k) { return k.compiled->source; })
      .def_prop_ro("explain", [](const Kernel& k) { return k.compiled->explain; })
      .def_prop_ro("library_path", [](const Kernel& k) { return k.compiled->library_path; })
      .def_prop_ro("from_disk_cache", [](const Kernel& k) { return k.compiled->from_disk_cache; })
      .def_prop_ro("device_source", [](const Kernel& k) { return k.compiled->device_source; })
      .def_prop_ro("ptx", [](const Kernel& k) { return k.compiled->ptx; })
      .def_prop_ro("device_arch", [](const Kernel& k) { return k.compiled->device_arch; })
      .def("call_cuda", &call_cuda, "args"_a, "stream"_a,
           "Runs a CUDA kernel. args: per parameter, (device pointer, shape, strides in elements) for arrays, "
           "else the scalar; returns the results with arrays as (pointer, shape, strides, dtype code, DeviceBuffer or "
           "None).");

  nb::class_<Dispatcher>(m, "Dispatcher", nb::type_slots(dispatcher_slots))
      .def(nb::init<>())
      .def(
          "_setup",
          [](Dispatcher& d, std::string name, std::string path, std::vector<std::string> params, int num_threads) {
            d.name = std::move(name);
            d.path = std::move(path);
            d.params = std::move(params);
            d.num_threads = num_threads < 1 ? 1 : num_threads;
          },
          "name"_a, "path"_a, "params"_a, "num_threads"_a)
      .def_prop_rw(
          "num_threads", [](const Dispatcher& d) { return d.num_threads; },
          [](Dispatcher& d, int n) {
            if (n < 1) throw nb::value_error("num_threads must be at least 1");
            d.num_threads = n;
          })
      .def(
          "_register",
          [](Dispatcher& d, const Kernel& kernel) {
            std::string key;
            for (const auto& type : kernel.compiled->signature.args) key.push_back(static_cast<char>(encode(type)));
            d.table.emplace(key, kernel.compiled);
          },
          "kernel"_a, "Makes calls whose argument types match the kernel's signature use it.")
      .def("_signature_of", &signature_for,
           "The signature a call with these (complete) arguments is compiled for.");
}
