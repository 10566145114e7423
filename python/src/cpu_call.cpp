// The CPU call path of plait._core.Dispatcher (dispatcher.h): NumPy
// arguments classified on the NumPy C API, the entry point called, and its
// results converted. It decides the call overhead of every cached kernel.
#include <nanobind/nanobind.h>

#include "numpy_api.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "argument_types.h"
#include "compile_bindings.h"
#include "dispatcher.h"
#include "jit/cpu_blas.h"
#include "jit/host_memory.h"
#include "module_errors.h"

namespace nb = nanobind;

namespace plait::python {

namespace {

[[noreturn]] void raise_unsupported_type(const Dispatcher& d, size_t index, PyObject* obj) {
  std::string why = "has unsupported type '";
  why += Py_TYPE(obj)->tp_name;
  why +=
      "'; plait kernels take NumPy arrays (bool, int8 to int64, uint8 to uint64, float32, float64; up to 4 "
      "dimensions) and bool, int or float scalars";
  raise_argument_error(d, index, why);
}

// Classifies argument `index`; returns its type code and fills `slot`, or
// kSparseArgument for a SciPy sparse matrix. Sets `guarded` when the
// argument is an array that a write must not reach (read-only, or a zero
// stride over more than one element), so that the call checks it against
// what the kernel writes (check_writes).
uint8_t classify(const Dispatcher& d, size_t index, PyObject* obj, ArgSlot& slot, bool& guarded) {
  if (PyArray_Check(obj)) {
    refuse_masked_array(d, index, obj);
    PyArrayObject* array = reinterpret_cast<PyArrayObject*>(obj);
    const int dtype = dtype_code(PyArray_DESCR(array));
    if (dtype < 0) {
      nb::str dtype_name = nb::str(nb::handle(reinterpret_cast<PyObject*>(PyArray_DESCR(array))));
      raise_argument_error(d, index,
                           std::string("has unsupported dtype '") + dtype_name.c_str() + "'; plait kernels take " +
                               kElementTypeNames + " arrays");
    }
    const int ndim = PyArray_NDIM(array);
    if (ndim == 0) {
      read_scalar(PyArray_DATA(array), dtype, slot);
      return scalar_code(dtype, false);
    }
    if (ndim > PLAIT_MAX_NDIM) {
      raise_argument_error(
          d, index, "is a " + std::to_string(ndim) + "-D array; plait kernels take arrays of up to 4 dimensions");
    }
    const int flags = PyArray_FLAGS(array);
    if (!(flags & NPY_ARRAY_ALIGNED)) raise_argument_error(d, index, "is not aligned to its item size");
    if (!(flags & NPY_ARRAY_WRITEABLE)) guarded = true;
    const npy_intp* shape = PyArray_DIMS(array);
    plait_array& out = slot.array;
    out.data = PyArray_DATA(array);
    for (int k = 0; k < ndim; ++k) out.shape[k] = shape[k];
    const plait::Layout layout =
        contiguous_layout((flags & NPY_ARRAY_C_CONTIGUOUS) != 0, (flags & NPY_ARRAY_F_CONTIGUOUS) != 0, ndim);
    if (layout != plait::Layout::Any) {
      write_canonical_strides(layout, ndim, out.shape, out.strides);
    } else {
      const npy_intp itemsize = PyArray_ITEMSIZE(array);
      const npy_intp* strides = PyArray_STRIDES(array);
      for (int k = 0; k < ndim; ++k) {
        if (strides[k] % itemsize != 0) {
          raise_argument_error(d, index,
                               "has a byte stride of " + std::to_string(strides[k]) +
                                   " that is not a multiple of its item size " + std::to_string(itemsize));
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
    if (overflow != 0) raise_argument_error(d, index, "is a Python int that does not fit in int64");
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
      raise_unsupported_type(d, index, obj);
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
    if (overflow != 0) raise_argument_error(d, index, "is a Python int that does not fit in int64");
    return scalar_code(PLAIT_INT64, true);
  }
  if (PyFloat_Check(obj)) {
    slot.f64 = PyFloat_AS_DOUBLE(obj);
    return scalar_code(PLAIT_FLOAT64, true);
  }
  if (is_scipy_sparse(obj)) return kSparseArgument;
  raise_unsupported_type(d, index, obj);
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
PyObject* array_result(plait_result& r, const plait::ArrayType& type, const KernelPtr& kernel, const CallState& call) {
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
      value =
          type.is_array() ? array_result(results[i], type.array, kernel, call) : scalar_result(results[i], type.scalar);
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

constexpr size_t kInlineArgs = 16;

}  // namespace

PyObject* call_cpu(Dispatcher& d, PyObject* self, PyObject* args_tuple) {
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
    const uint8_t code = classify(d, i, args[i], slots[i], guarded);
    if (code == kSparseArgument) return PyObject_CallMethod(self, "_call_sparse", "(O)", args_tuple);
    key[i] = static_cast<char>(code);
    pointers[i] = &slots[i];
  }

  auto found = d.table.find(key);
  const KernelPtr& kernel = found != d.table.end() ? found->second : compile_for_key(d, self, key);
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
  ctx.blas = plait::jit::cpu_blas_api();
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
  return fold_declared_results(*kernel, build_results(results, kernel, call), args_tuple);
}

std::string cpu_signature(const Dispatcher& d, nb::handle args) {
  const size_t nargs = nb::len(args);
  std::string key(nargs, '\0');
  std::vector<ArgSlot> slots(nargs);
  bool guarded = false;
  for (size_t i = 0; i < nargs; ++i) {
    const uint8_t code = classify(d, i, args[i].ptr(), slots[i], guarded);
    if (code == kSparseArgument) {
      throw nb::type_error("a sparse matrix argument: the kernel's signature is known once it is called");
    }
    key[i] = static_cast<char>(code);
  }
  return signature_of(key);
}

}  // namespace plait::python
