// Classifying the arguments of a CUDA call (cuda_call_plan.h). Nothing here
// touches the GPU but the device checks of PyTorch and CuPy arrays; the
// copies of NumPy arrays are in cuda_call.cpp.
#include "cuda_call_plan.h"

#include <nanobind/stl/string.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "jit/cuda_runtime.h"
#include "module_errors.h"

namespace nb = nanobind;

namespace plait::python {

namespace {

// Held for the process's lifetime: the classes of plait/cuda.py, torch with
// its dtypes (imported at the first tensor argument) and cupy (at the first
// CuPy array).
PyObject* g_device_array_class = nullptr;
PyObject* g_unavailable_error = nullptr;
PyObject* g_torch = nullptr;
PyObject* g_torch_dtypes = nullptr;  // torch dtype -> plait dtype code, for the dtypes kernels take
PyObject* g_cupy = nullptr;
bool g_cuda_ready = false;
int g_device_ordinal = -1;  // the GPU plait runs on, asked once

// Whether type(obj).__module__ starts with `prefix`: PyTorch's and CuPy's
// arrays are recognised without importing either.
bool type_module_starts_with(PyObject* obj, std::string_view prefix) {
  nb::object module = nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(obj))).attr("__module__");
  if (!PyUnicode_Check(module.ptr())) return nb::cast<bool>(module.attr("startswith")(prefix));
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(module.ptr(), &size);
  if (text == nullptr) throw nb::python_error();
  return std::string_view(text, static_cast<size_t>(size)).starts_with(prefix);
}

// The attribute, or an invalid object where Python's getattr raises
// AttributeError (other errors are raised).
nb::object attribute(PyObject* obj, const char* name) {
  PyObject* value = PyObject_GetAttrString(obj, name);
  if (value != nullptr) return nb::steal(value);
  if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw nb::python_error();
  PyErr_Clear();
  return nb::object();
}

bool has_attribute(PyObject* obj, const char* name) {
  return attribute(obj, name).is_valid();
}

// A torch tensor in a sparse layout (sparse_csr, sparse_coo, ...): its
// layout is not torch.strided.
bool is_torch_sparse(PyObject* obj) {
  static PyObject* strided = nullptr;
  if (strided == nullptr) strided = nb::object(nb::module_::import_("torch").attr("strided")).release().ptr();
  nb::object layout = attribute(obj, "layout");
  return layout.is_valid() && layout.ptr() != strided;
}

// The plait dtype code of an array's dtype attribute, or -1.
int dtype_code_of(nb::handle dtype) {
  return PyArray_DescrCheck(dtype.ptr()) ? dtype_code(reinterpret_cast<PyArray_Descr*>(dtype.ptr())) : -1;
}

std::string type_name(PyObject* obj) {
  return nb::cast<std::string>(nb::str(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(obj))).attr("__name__")));
}

[[noreturn]] void raise_dtype_error(const Dispatcher& d, size_t index, nb::handle dtype) {
  raise_argument_error(d, index,
                       "has unsupported dtype '" + nb::cast<std::string>(nb::str(dtype)) + "'; CUDA kernels take " +
                           kElementTypeNames + " arrays");
}

[[noreturn]] void raise_ndim_error(const Dispatcher& d, size_t index, size_t ndim) {
  raise_argument_error(d, index,
                       "is a " + std::to_string(ndim) + "-D GPU array; CUDA kernels take arrays of 1 to 4 dimensions");
}

// Refuses an array on another GPU than plait's (`ordinal` None: not known).
void check_device(const Dispatcher& d, size_t index, nb::handle ordinal) {
  if (g_device_ordinal < 0) {
    try {
      g_device_ordinal = plait::jit::cuda_device().ordinal;
    } catch (const std::exception& e) {
      rethrow_as_python(e);
    }
  }
  if (ordinal.is_none() || ordinal.equal(nb::int_(g_device_ordinal))) return;
  const std::string message = d.name + "(): argument " + std::to_string(index) + " is on GPU " +
                              nb::cast<std::string>(nb::str(ordinal)) + "; plait runs CUDA kernels on GPU " +
                              std::to_string(g_device_ordinal);
  throw nb::value_error(message.c_str());
}

// The plait dtype code of a torch dtype, or -1.
int torch_dtype_code(nb::handle dtype) {
  if (g_torch_dtypes == nullptr) {
    nb::dict codes;
    for (int code = PLAIT_BOOL; code <= PLAIT_FLOAT64; ++code) {
      nb::object torch_dtype = attribute(g_torch, plait::numpy_dtype_name(static_cast<plait::ScalarKind>(code)));
      if (torch_dtype.is_valid() && !torch_dtype.is_none()) codes[torch_dtype] = code;
    }
    g_torch_dtypes = codes.release().ptr();
  }
  PyObject* code = PyDict_GetItemWithError(g_torch_dtypes, dtype.ptr());
  if (code == nullptr && PyErr_Occurred()) throw nb::python_error();
  return code == nullptr ? -1 : nb::cast<int>(nb::handle(code));
}

std::vector<int64_t> int_tuple(nb::handle sequence) {
  std::vector<int64_t> values;
  for (nb::handle value : sequence) values.push_back(nb::cast<int64_t>(value));
  return values;
}

// The bytes [low, high) a NumPy array's elements occupy in host memory.
std::pair<uintptr_t, uintptr_t> byte_range(PyArrayObject* array) {
  uintptr_t low = reinterpret_cast<uintptr_t>(PyArray_DATA(array));
  uintptr_t high = low;
  for (int k = 0; k < PyArray_NDIM(array); ++k) {
    const npy_intp extent = (PyArray_DIMS(array)[k] - 1) * PyArray_STRIDES(array)[k];
    (extent < 0 ? low : high) += static_cast<uintptr_t>(extent);
  }
  return {low, high + static_cast<uintptr_t>(PyArray_ITEMSIZE(array))};
}

// Whether an array's address and byte strides are multiples of its item
// size, so that it can be a view of a span in element strides.
bool element_aligned(PyArrayObject* array) {
  const npy_intp itemsize = PyArray_ITEMSIZE(array);
  if (reinterpret_cast<uintptr_t>(PyArray_DATA(array)) % static_cast<uintptr_t>(itemsize) != 0) return false;
  for (int k = 0; k < PyArray_NDIM(array); ++k) {
    if (PyArray_STRIDES(array)[k] % itemsize != 0) return false;
  }
  return true;
}

// torch.cuda.current_stream() as a raw stream. torch.cuda.current_stream()
// builds a Stream object through several Python functions on every call;
// torch._C's own functions, where this PyTorch has them, give the same
// stream of the current device directly. They are kept for the process
// (never released: the interpreter may be gone at exit).
uintptr_t torch_current_stream() {
  static PyObject* current_device = nullptr;
  static PyObject* raw_stream = nullptr;
  static bool looked = false;
  if (!looked) {
    looked = true;
    nb::object c = nb::handle(g_torch).attr("_C");
    nb::object device = attribute(c.ptr(), "_cuda_getDevice");
    nb::object stream = attribute(c.ptr(), "_cuda_getCurrentRawStream");
    if (device.is_valid() && stream.is_valid()) {
      current_device = device.release().ptr();
      raw_stream = stream.release().ptr();
    }
  }
  if (raw_stream != nullptr) return nb::cast<uintptr_t>(nb::handle(raw_stream)(nb::handle(current_device)()));
  return nb::cast<uintptr_t>(nb::handle(g_torch).attr("cuda").attr("current_stream")().attr("cuda_stream"));
}

}  // namespace

void set_cuda_classes(nb::handle device_array, nb::handle unavailable_error) {
  g_device_array_class = device_array.inc_ref().ptr();
  g_unavailable_error = unavailable_error.inc_ref().ptr();
}

nb::handle device_array_class() {
  return g_device_array_class;
}

void require_cuda() {
  if (g_cuda_ready) return;
  const std::string reason = plait::jit::cuda_unavailable_reason();
  if (!reason.empty()) {
    const std::string message = "plait target='cuda' cannot run here: " + reason;
    PyErr_SetString(g_unavailable_error != nullptr ? g_unavailable_error : PyExc_RuntimeError, message.c_str());
    throw nb::python_error();
  }
  g_cuda_ready = true;
}

CudaCallPlan::CudaCallPlan(const Dispatcher& d, nb::handle args) : args_(nb::borrow(args)) {
  const size_t nargs = static_cast<size_t>(PyTuple_GET_SIZE(args.ptr()));
  key_.assign(nargs, '\0');
  slots_.resize(nargs);
  host_index_.assign(nargs, -1);
  for (size_t i = 0; i < nargs; ++i) classify(d, i, PyTuple_GET_ITEM(args.ptr(), i));
  plan_shared_spans();
  place_host_arrays();
  if (torch_) {
    stream_ = torch_current_stream();
  } else if (cupy_) {
    stream_ = nb::cast<uintptr_t>(nb::handle(g_cupy).attr("cuda").attr("get_current_stream")().attr("ptr"));
  }
}

void CudaCallPlan::classify(const Dispatcher& d, size_t index, PyObject* obj) {
  ArgSlot& slot = slots_[index];
  // Python numbers first: their type is none of the arrays' below.
  if (PyBool_Check(obj)) {
    slot.b = obj == Py_True;
    key_[index] = static_cast<char>(scalar_code(PLAIT_BOOL, true));
    return;
  }
  if (PyFloat_CheckExact(obj)) {
    slot.f64 = PyFloat_AS_DOUBLE(obj);
    key_[index] = static_cast<char>(scalar_code(PLAIT_FLOAT64, true));
    return;
  }
  const bool python_int = PyLong_CheckExact(obj);
  if (!python_int) {
    if (PyArray_Check(obj)) {
      refuse_masked_array(d, index, obj);
      if (PyArray_NDIM(reinterpret_cast<PyArrayObject*>(obj)) > 0) {
        add_host_array(d, index, reinterpret_cast<PyArrayObject*>(obj));
      } else {
        classify_numpy_scalar(d, index, obj);
      }
      return;
    }
    if (PyArray_IsScalar(obj, Generic)) {
      classify_numpy_scalar(d, index, obj);
      return;
    }
    if (type_module_starts_with(obj, "torch") && has_attribute(obj, "is_cuda")) {
      if (is_torch_sparse(obj)) throw SparseArgument{};
      classify_torch_tensor(d, index, obj);
      return;
    }
    // DeviceArrays and CuPy arrays are read through their own attributes;
    // other GPU arrays through __cuda_array_interface__.
    const int device_array = g_device_array_class != nullptr ? PyObject_IsInstance(obj, g_device_array_class) : 0;
    if (device_array < 0) throw nb::python_error();
    if (device_array == 1) {
      device_arrays_ = true;
      nb::handle array(obj);
      StridedView view;
      view.pointer = nb::cast<uintptr_t>(array.attr("pointer"));
      view.shape = int_tuple(array.attr("shape"));
      view.strides = int_tuple(array.attr("_strides"));
      nb::object dtype = array.attr("dtype");
      add_device_array(d, index, view, dtype, dtype_code_of(dtype));
      return;
    }
    // cupyx.scipy.sparse matrices go through _call_sparse, as SciPy's do.
    if (type_module_starts_with(obj, "cupyx") && is_scipy_sparse(obj)) throw SparseArgument{};
    if (type_module_starts_with(obj, "cupy") && has_attribute(obj, "data")) {
      classify_cupy_array(d, index, obj);
      return;
    }
    nb::object interface = attribute(obj, "__cuda_array_interface__");
    if (interface.is_valid() && !interface.is_none()) {
      nb::object dtype;
      const StridedView view = read_array_interface(interface, dtype);
      add_device_array(d, index, view, dtype, dtype_code_of(dtype));
      return;
    }
  }
  if (PyLong_Check(obj)) {
    int overflow = 0;
    slot.i64 = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow != 0) raise_argument_error(d, index, "is a Python int that does not fit in int64");
    if (slot.i64 == -1 && PyErr_Occurred()) throw nb::python_error();
    key_[index] = static_cast<char>(scalar_code(PLAIT_INT64, true));
    return;
  }
  if (PyFloat_Check(obj)) {
    slot.f64 = PyFloat_AS_DOUBLE(obj);
    key_[index] = static_cast<char>(scalar_code(PLAIT_FLOAT64, true));
    return;
  }
  if (is_scipy_sparse(obj)) throw SparseArgument{};
  raise_argument_error(d, index,
                       "has unsupported type '" + type_name(obj) +
                           "'; CUDA kernels take CuPy arrays, PyTorch CUDA tensors, NumPy arrays, plait.DeviceArray "
                           "and bool, int or float scalars");
}

// A 0-d NumPy array or a NumPy scalar, passed by value.
void CudaCallPlan::classify_numpy_scalar(const Dispatcher& d, size_t index, PyObject* obj) {
  alignas(16) unsigned char value[16];
  int code;
  if (PyArray_Check(obj)) {
    PyArrayObject* array = reinterpret_cast<PyArrayObject*>(obj);
    code = dtype_code(PyArray_DESCR(array));
    if (code >= 0) std::memcpy(value, PyArray_DATA(array), static_cast<size_t>(PyArray_ITEMSIZE(array)));
  } else {
    PyArray_Descr* descr = PyArray_DescrFromScalar(obj);
    if (descr == nullptr) throw nb::python_error();
    code = dtype_code(descr);
    Py_DECREF(descr);
    if (code >= 0) PyArray_ScalarAsCtype(obj, value);
  }
  if (code < 0) raise_argument_error(d, index, "has unsupported type '" + type_name(obj) + "'");
  read_scalar(value, code, slots_[index]);
  key_[index] = static_cast<char>(scalar_code(code, false));
}

void CudaCallPlan::classify_torch_tensor(const Dispatcher& d, size_t index, PyObject* obj) {
  if (g_torch == nullptr) g_torch = nb::module_::import_("torch").release().ptr();
  nb::handle tensor(obj);
  if (!nb::cast<bool>(nb::bool_(tensor.attr("is_cuda")))) {
    raise_argument_error(d, index, "is a PyTorch CPU tensor; pass a CUDA tensor or a NumPy array");
  }
  torch_ = true;
  check_device(d, index, tensor.attr("get_device")());
  // The tensor's own accessors: its __cuda_array_interface__ builds a
  // dictionary in Python on every call, several times slower.
  nb::object dtype = tensor.attr("dtype");
  const int code = torch_dtype_code(dtype);
  if (code < 0) raise_dtype_error(d, index, dtype);
  StridedView view;
  view.pointer = nb::cast<uintptr_t>(tensor.attr("data_ptr")());
  view.shape = int_tuple(tensor.attr("shape"));
  view.strides = int_tuple(tensor.attr("stride")());
  add_device_array(d, index, view, dtype, code);
}

void CudaCallPlan::classify_cupy_array(const Dispatcher& d, size_t index, PyObject* obj) {
  if (g_cupy == nullptr) g_cupy = nb::module_::import_("cupy").release().ptr();
  cupy_ = true;
  nb::handle array(obj);
  check_device(d, index, array.attr("device").attr("id"));
  StridedView view;
  view.strides = element_strides(array.attr("strides"), array.attr("itemsize"));
  view.pointer = nb::cast<uintptr_t>(array.attr("data").attr("ptr"));
  view.shape = int_tuple(array.attr("shape"));
  nb::object dtype = array.attr("dtype");
  add_device_array(d, index, view, dtype, dtype_code_of(dtype));
}

// A GPU array argument (`code`: its dtype's, -1 when kernels do not take it),
// passed in place. C and F layouts get canonical strides.
void CudaCallPlan::add_device_array(const Dispatcher& d, size_t index, const StridedView& view, nb::handle dtype,
                                    int code) {
  if (code < 0) raise_dtype_error(d, index, dtype);
  const size_t ndim = view.shape.size();
  if (ndim == 0 || ndim > PLAIT_MAX_NDIM) raise_ndim_error(d, index, ndim);
  const int n = static_cast<int>(ndim);
  plait_array& out = slots_[index].array;
  out.data = reinterpret_cast<void*>(view.pointer);
  for (int k = 0; k < n; ++k) {
    out.shape[k] = view.shape[static_cast<size_t>(k)];
    out.strides[k] = view.strides[static_cast<size_t>(k)];
  }
  const plait::Layout layout = contiguous_layout(follows_order(n, out.shape, out.strides, false),
                                                 follows_order(n, out.shape, out.strides, true), n);
  if (layout != plait::Layout::Any) write_canonical_strides(layout, n, out.shape, out.strides);
  key_[index] = static_cast<char>(array_code(code, n, layout));
}

// A NumPy array: its strides on the GPU and its type code wait for
// place_host_arrays, which knows which arrays share a span.
void CudaCallPlan::add_host_array(const Dispatcher& d, size_t index, PyArrayObject* array) {
  const int code = dtype_code(PyArray_DESCR(array));
  if (code < 0) raise_dtype_error(d, index, nb::handle(reinterpret_cast<PyObject*>(PyArray_DESCR(array))));
  const int ndim = PyArray_NDIM(array);
  if (!(PyArray_FLAGS(array) & NPY_ARRAY_WRITEABLE)) guarded_ = true;
  for (int k = 0; k < ndim; ++k) guarded_ = guarded_ || PyArray_STRIDES(array)[k] == 0;
  if (ndim > PLAIT_MAX_NDIM) raise_ndim_error(d, index, static_cast<size_t>(ndim));
  int entry = 0;
  while (entry < static_cast<int>(host_arrays_.size()) && host_arrays_[static_cast<size_t>(entry)].array != array) {
    ++entry;
  }
  if (entry == static_cast<int>(host_arrays_.size())) host_arrays_.push_back(HostArray{array});
  host_index_[index] = entry;
  plait_array& out = slots_[index].array;
  out.data = PyArray_DATA(array);
  for (int k = 0; k < ndim; ++k) out.shape[k] = PyArray_DIMS(array)[k];
}

// Finds the NumPy arrays (none empty) whose bytes overlap another's, in
// groups linked by chains of overlaps, and makes each group a shared span:
// a kernel that writes one and reads another sees, as NumPy does, one memory
// (the compiled statements test for the overlap). A group with an array
// whose address or byte strides are not multiples of its item size keeps
// copies of their own.
void CudaCallPlan::plan_shared_spans() {
  std::vector<std::tuple<uintptr_t, uintptr_t, int>> ranges;  // (low, high, entry), sorted
  for (size_t k = 0; k < host_arrays_.size(); ++k) {
    PyArrayObject* array = host_arrays_[k].array;
    if (PyArray_SIZE(array) == 0) continue;
    const auto [low, high] = byte_range(array);
    ranges.emplace_back(low, high, static_cast<int>(k));
  }
  if (ranges.size() < 2) return;
  std::sort(ranges.begin(), ranges.end());
  std::vector<int> group;
  uintptr_t group_low = 0;
  uintptr_t end = 0;
  auto close_group = [&]() {
    if (group.size() < 2) return;
    for (int k : group) {
      if (!element_aligned(host_arrays_[static_cast<size_t>(k)].array)) return;
    }
    for (int k : group) host_arrays_[static_cast<size_t>(k)].span = static_cast<int>(spans_.size());
    spans_.push_back(SharedSpan{group_low - group_low % kSpanAlignment, end, group});
  };
  for (const auto& [low, high, k] : ranges) {
    if (!group.empty() && low < end) {
      group.push_back(k);
      end = std::max(end, high);
      continue;
    }
    close_group();
    group.assign(1, k);
    group_low = low;
    end = high;
  }
  close_group();
}

// The strides each NumPy array has on the GPU, and the type codes of the
// NumPy arguments: an array in a shared span keeps its own strides; one
// copied on its own has its copy's (C, or F for a Fortran-ordered array).
void CudaCallPlan::place_host_arrays() {
  for (HostArray& host : host_arrays_) {
    PyArrayObject* array = host.array;
    const int ndim = PyArray_NDIM(array);
    int64_t shape[PLAIT_MAX_NDIM];
    for (int k = 0; k < ndim; ++k) shape[k] = PyArray_DIMS(array)[k];
    plait::Layout layout;
    if (host.span >= 0) {
      for (int k = 0; k < ndim; ++k) host.strides[k] = PyArray_STRIDES(array)[k] / PyArray_ITEMSIZE(array);
      layout = contiguous_layout(follows_order(ndim, shape, host.strides, false),
                                 follows_order(ndim, shape, host.strides, true), ndim);
    } else {
      host.fortran =
          !(PyArray_FLAGS(array) & NPY_ARRAY_C_CONTIGUOUS) && (PyArray_FLAGS(array) & NPY_ARRAY_F_CONTIGUOUS);
      layout = contiguous_layout(!host.fortran, host.fortran, ndim);
    }
    if (layout != plait::Layout::Any) write_canonical_strides(layout, ndim, shape, host.strides);
    host.layout = layout;
  }
  for (size_t i = 0; i < host_index_.size(); ++i) {
    if (host_index_[i] < 0) continue;
    const HostArray& host = host_arrays_[static_cast<size_t>(host_index_[i])];
    const int ndim = PyArray_NDIM(host.array);
    std::memcpy(slots_[i].array.strides, host.strides, sizeof host.strides);
    key_[i] = static_cast<char>(array_code(dtype_code(PyArray_DESCR(host.array)), ndim, host.layout));
  }
}

}  // namespace plait::python
