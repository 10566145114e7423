// The call of a CUDA kernel (cuda_call_plan.h): NumPy arguments copied to the
// GPU and back, the entry point run on the call's stream, the results wrapped
// as the caller's kind of array; and the copies a tuning run times on.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "compile_bindings.h"
#include "cuda_call_plan.h"
#include "jit/cuda_runtime.h"
#include "module_errors.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace plait::python {

namespace {

// Runs a CUDA kernel on argument slots, filling `results`; raises the
// kernel's error (its owned results released).
void run_kernel(const plait::CompiledKernel& kernel, void** args, std::vector<plait_result>& results,
                uintptr_t stream) {
  const size_t nresults = kernel.results.size();
  results.resize(nresults > 0 ? nresults : 1);
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
    status = plait::jit::call_cuda_kernel(kernel, args, results.data(), &ctx, stream);
  } catch (const std::exception& e) {
    release_results(results.data(), nresults);
    rethrow_as_python(e);
  }
  if (status != PLAIT_OK) {
    release_results(results.data(), nresults);
    set_kernel_error(status, ctx, kernel.python_source);
    throw nb::python_error();
  }
}

// The DeviceBuffer that takes over an array result the kernel allocated.
std::unique_ptr<DeviceBuffer> take_result_buffer(plait_result& r, const plait::ArrayType& type,
                                                 const KernelPtr& kernel) {
  size_t count = 1;
  for (int k = 0; k < type.ndim; ++k) count *= static_cast<size_t>(r.array.shape[k]);
  auto buffer = std::make_unique<DeviceBuffer>();
  buffer->pointer = reinterpret_cast<uintptr_t>(r.array.data);
  buffer->nbytes = count * static_cast<size_t>(item_size(static_cast<int>(type.dtype)));
  buffer->owner = r.owner;
  buffer->release = r.release;
  buffer->kernel = kernel;
  r.owner = nullptr;
  return buffer;
}

nb::tuple int_tuple(int ndim, const int64_t* values) {
  nb::list list;
  for (int k = 0; k < ndim; ++k) list.append(values[k]);
  return nb::tuple(list);
}

}  // namespace

void call_cuda_on_values(const Kernel& kernel, nb::list values, uintptr_t stream) {
  const plait::CompiledKernel& compiled = *kernel.compiled;
  const size_t nargs = compiled.signature.args.size();
  if (values.size() != nargs) throw nb::value_error("call_cuda: wrong number of arguments");
  std::vector<ArgSlot> slots(nargs);
  std::vector<void*> pointers(nargs);
  for (size_t i = 0; i < nargs; ++i) {
    const plait::ValueType& type = compiled.signature.args[i];
    ArgSlot& slot = slots[i];
    pointers[i] = &slot;
    if (type.is_array()) {
      nb::tuple view = nb::cast<nb::tuple>(values[i]);
      nb::tuple shape = nb::cast<nb::tuple>(view[1]);
      nb::tuple strides = nb::cast<nb::tuple>(view[2]);
      std::memset(&slot.array, 0, sizeof slot.array);
      slot.array.data = reinterpret_cast<void*>(nb::cast<uintptr_t>(view[0]));
      for (int k = 0; k < type.array.ndim; ++k) {
        slot.array.shape[k] = nb::cast<int64_t>(shape[static_cast<size_t>(k)]);
        slot.array.strides[k] = nb::cast<int64_t>(strides[static_cast<size_t>(k)]);
      }
    } else if (type.scalar.is_bool()) {
      slot.b = nb::cast<bool>(values[i]) ? 1 : 0;
    } else if (type.scalar.is_int()) {
      slot.i64 = nb::cast<int64_t>(values[i]);
    } else {
      slot.f64 = nb::cast<double>(values[i]);
    }
  }
  std::vector<plait_result> results;
  run_kernel(compiled, pointers.data(), results, stream);
  release_results(results.data(), compiled.results.size());
}

namespace {

// The GPU copies of a tuning run's arrays: restore() queues on the call's
// stream a copy of the originals into them.
struct DeviceCopies {
  struct Copy {
    std::unique_ptr<DeviceBuffer> buffer;
    uintptr_t source;
    size_t nbytes;
  };
  std::vector<Copy> copies;
  uintptr_t stream = 0;

  DeviceCopies() = default;
  DeviceCopies(const DeviceCopies&) = delete;
  DeviceCopies& operator=(const DeviceCopies&) = delete;

  void restore() const {
    for (const Copy& copy : copies) {
      try {
        plait::jit::copy_device_to_device(copy.buffer->pointer, copy.source, copy.nbytes, stream);
      } catch (const std::exception& e) {
        rethrow_as_python(e);
      }
    }
  }
};

}  // namespace

std::vector<void*> CudaCallPlan::slot_pointers() {
  std::vector<void*> pointers(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) pointers[i] = &slots_[i];
  return pointers;
}

void CudaCallPlan::stage() {
  for (SharedSpan& span : spans_) {
    std::unique_ptr<DeviceBuffer> buffer = new_device_buffer(span.end - span.start);
    try {
      nb::gil_scoped_release release;
      plait::jit::copy_host_to_device(buffer->pointer, reinterpret_cast<const void*>(span.start), span.end - span.start,
                                      0);
    } catch (const std::exception& e) {
      rethrow_as_python(e);
    }
    span.device = buffer->pointer;
    buffers_.push_back(std::move(buffer));
    for (int k : span.members) {
      HostArray& host = host_arrays_[static_cast<size_t>(k)];
      host.device = span.device + (reinterpret_cast<uintptr_t>(PyArray_DATA(host.array)) - span.start);
    }
  }
  for (HostArray& host : host_arrays_) {
    if (host.span >= 0) continue;
    bool fortran = false;
    buffers_.push_back(copy_array_to_device(host.array, 0, fortran));
    host.device = buffers_.back()->pointer;
  }
  for (size_t i = 0; i < host_index_.size(); ++i) {
    if (host_index_[i] >= 0) {
      slots_[i].array.data = reinterpret_cast<void*>(host_arrays_[static_cast<size_t>(host_index_[i])].device);
    }
  }
}

void CudaCallPlan::copy_back() {
  auto copy = [this](const HostArray& host) {
    PyArrayObject* array = host.array;
    const size_t nbytes = static_cast<size_t>(PyArray_NBYTES(array));
    if (!(PyArray_FLAGS(array) & NPY_ARRAY_WRITEABLE) || nbytes == 0) return;
    // A copy of its own, of an array contiguous in the copy's order, comes
    // back byte for byte.
    const int order = host.fortran ? NPY_ARRAY_F_CONTIGUOUS : NPY_ARRAY_C_CONTIGUOUS;
    if (host.span < 0 && (PyArray_FLAGS(array) & order)) {
      try {
        nb::gil_scoped_release release;
        plait::jit::copy_device_to_host(PyArray_DATA(array), host.device, nbytes, stream_);
      } catch (const std::exception& e) {
        rethrow_as_python(e);
      }
      return;
    }
    copy_view_into(array, host.device, host.strides, stream_);
  };
  for (const SharedSpan& span : spans_) {
    for (int k : span.members) copy(host_arrays_[static_cast<size_t>(k)]);
  }
  for (const HostArray& host : host_arrays_) {
    if (host.span < 0) copy(host);
  }
}

nb::object CudaCallPlan::wrap_array(plait_result& r, const plait::ArrayType& type,
                                    std::unique_ptr<DeviceBuffer> buffer) {
  const int ndim = type.ndim;
  if (buffer == nullptr) {
    // A borrowed result: an argument itself.
    for (size_t i = 0; i < key_.size(); ++i) {
      const uint8_t code = static_cast<uint8_t>(key_[i]);
      if (!is_array_code(code) || code_ndim(code) != ndim || slots_[i].array.data != r.array.data) continue;
      if (std::equal(r.array.shape, r.array.shape + ndim, slots_[i].array.shape)) return nb::borrow(args()[i]);
    }
    throw std::runtime_error("plait: a returned array that is neither new nor an argument");
  }
  const int dtype = static_cast<int>(type.dtype);
  PyArray_Descr* descr = PyArray_DescrFromType(numpy_type(dtype));
  if (descr == nullptr) throw nb::python_error();
  nb::object dtype_object = nb::steal(reinterpret_cast<PyObject*>(descr));
  if (!torch_ && !cupy_ && !device_arrays_) {
    return copy_view_to_host(buffer->pointer, ndim, r.array.shape, r.array.strides, descr, stream_);
  }
  const uintptr_t pointer = buffer->pointer;
  nb::object device_array = device_array_class()(std::move(buffer), pointer, int_tuple(ndim, r.array.shape),
                                                 int_tuple(ndim, r.array.strides), dtype_object);
  if (torch_) return nb::module_::import_("torch").attr("as_tensor")(device_array, "device"_a = "cuda");
  if (cupy_) return nb::module_::import_("cupy").attr("asarray")(device_array);
  return device_array;
}

nb::object CudaCallPlan::result_values(const KernelPtr& kernel, std::vector<plait_result>& results) {
  const size_t count = kernel->results.size();
  // Every buffer the kernel allocated is owned first, so that an error
  // below frees the rest.
  std::vector<std::unique_ptr<DeviceBuffer>> buffers(count);
  for (size_t i = 0; i < count; ++i) {
    const plait::ValueType& type = kernel->results[i];
    if (type.is_array() && results[i].owner != nullptr) buffers[i] = take_result_buffer(results[i], type.array, kernel);
  }
  nb::list values;
  for (size_t i = 0; i < count; ++i) {
    const plait::ValueType& type = kernel->results[i];
    if (type.is_array()) {
      values.append(wrap_array(results[i], type.array, std::move(buffers[i])));
      continue;
    }
    PyObject* value = scalar_result(results[i], type.scalar);
    if (value == nullptr) throw nb::python_error();
    values.append(nb::steal(value));
  }
  if (kernel->returns_list) return values;
  if (kernel->returns_tuple) return nb::tuple(values);
  return count > 0 ? nb::object(values[0]) : nb::none();
}

nb::list CudaCallPlan::array_shapes() const {
  nb::list shapes;
  for (size_t i = 0; i < key_.size(); ++i) {
    const uint8_t code = static_cast<uint8_t>(key_[i]);
    if (is_array_code(code)) shapes.append(int_tuple(code_ndim(code), slots_[i].array.shape));
  }
  return shapes;
}

nb::list CudaCallPlan::values() const {
  nb::list values;
  for (size_t i = 0; i < key_.size(); ++i) {
    const uint8_t code = static_cast<uint8_t>(key_[i]);
    const ArgSlot& slot = slots_[i];
    if (is_array_code(code)) {
      const int ndim = code_ndim(code);
      values.append(nb::make_tuple(reinterpret_cast<uintptr_t>(slot.array.data), int_tuple(ndim, slot.array.shape),
                                   int_tuple(ndim, slot.array.strides)));
    } else if (code_dtype(code) == PLAIT_BOOL) {
      values.append(nb::bool_(slot.b != 0));
    } else if (code_dtype(code) == PLAIT_FLOAT32 || code_dtype(code) == PLAIT_FLOAT64) {
      values.append(nb::float_(slot.f64));
    } else {
      values.append(nb::int_(slot.i64));
    }
  }
  return values;
}

nb::tuple CudaCallPlan::copied_values() const {
  // The bytes each array spans, in order of address: arrays whose spans
  // overlap share one copy.
  std::vector<std::tuple<uintptr_t, uintptr_t, size_t>> spans;
  for (size_t i = 0; i < key_.size(); ++i) {
    const uint8_t code = static_cast<uint8_t>(key_[i]);
    if (!is_array_code(code)) continue;
    const plait_array& array = slots_[i].array;
    const int64_t itemsize = item_size(code_dtype(code));
    int64_t low = 0;
    int64_t high = 0;
    bool empty = false;
    for (int k = 0; k < code_ndim(code); ++k) {
      empty = empty || array.shape[k] == 0;
      const int64_t extent = (array.shape[k] - 1) * array.strides[k];
      (extent < 0 ? low : high) += extent;
    }
    if (empty) continue;
    const uintptr_t pointer = reinterpret_cast<uintptr_t>(array.data);
    spans.emplace_back(pointer + static_cast<uintptr_t>(low * itemsize),
                       pointer + static_cast<uintptr_t>((high + 1) * itemsize), i);
  }
  std::sort(spans.begin(), spans.end());
  nb::list values = this->values();
  auto restore = std::make_unique<DeviceCopies>();
  restore->stream = stream_;
  // Each copy keeps its original's address modulo kSpanAlignment, so that
  // vector accesses take the same path as on the originals.
  size_t first = 0;
  uintptr_t end = 0;
  auto copy_group = [&](size_t last) {
    const uintptr_t start = std::get<0>(spans[first]) - std::get<0>(spans[first]) % kSpanAlignment;
    std::unique_ptr<DeviceBuffer> buffer = new_device_buffer(end - start);
    for (size_t g = first; g < last; ++g) {
      const size_t i = std::get<2>(spans[g]);
      const int ndim = code_ndim(static_cast<uint8_t>(key_[i]));
      const plait_array& array = slots_[i].array;
      values[i] = nb::make_tuple(buffer->pointer + (reinterpret_cast<uintptr_t>(array.data) - start),
                                 int_tuple(ndim, array.shape), int_tuple(ndim, array.strides));
    }
    restore->copies.push_back(DeviceCopies::Copy{std::move(buffer), start, end - start});
  };
  for (size_t g = 0; g < spans.size(); ++g) {
    const auto& [low, high, index] = spans[g];
    if (g > first && low >= end) {
      copy_group(g);
      first = g;
    }
    end = g > first ? std::max(end, high) : high;
  }
  if (!spans.empty()) copy_group(spans.size());
  restore->restore();
  return nb::make_tuple(values, std::move(restore));
}

PyObject* call_cuda(Dispatcher& d, PyObject* self, PyObject* args) {
  std::unique_ptr<CudaCallPlan> owned;
  try {
    owned = std::make_unique<CudaCallPlan>(d, nb::handle(args));
  } catch (const SparseArgument&) {
    return PyObject_CallMethod(self, "_call_sparse", "(O)", args);
  }
  CudaCallPlan& plan = *owned;
  plan.stage();
  KernelPtr kernel;
  nb::object held;  // a tuned call's plan, as the Python object _tuned_kernel was given
  if (d.tuned) {
    held = nb::cast(std::move(owned));
    nb::object chosen = nb::borrow(self).attr("_tuned_kernel")(held);
    kernel = nb::cast<Kernel&>(chosen).compiled;
  } else {
    auto found = d.table.find(plan.key());
    kernel = found != d.table.end() ? found->second : compile_for_key(d, self, plan.key());
  }
  if (plan.guarded()) check_writes(d, *kernel, plan.args(), plan.key());
  std::vector<void*> pointers = plan.slot_pointers();
  std::vector<plait_result> results;
  try {
    run_kernel(*kernel, pointers.data(), results, plan.stream());
  } catch (nb::python_error&) {
    // NumPy arguments get what the kernel wrote before the error, as on the
    // CPU; the kernel's error is the one raised.
    try {
      plan.copy_back();
    } catch (nb::python_error& copy_error) {
      if (!copy_error.matches(PyExc_Exception)) throw;
    }
    throw;
  }
  plan.copy_back();
  return fold_declared_results(*kernel, plan.result_values(kernel, results).release().ptr(), args);
}

std::string cuda_signature(const Dispatcher& d, nb::handle args) {
  try {
    return CudaCallPlan(d, args).signature();
  } catch (const SparseArgument&) {
    throw nb::type_error("a sparse matrix argument: the kernel's signature is known once it is called");
  }
}

void define_cuda_call(nb::module_& m) {
  m.def("_set_cuda_classes", &set_cuda_classes, "device_array"_a, "unavailable_error"_a,
        "Registers plait/cuda.py's DeviceArray and CudaUnavailableError.");
  m.def("require_cuda", &require_cuda,
        "Raises CudaUnavailableError naming what is missing when CUDA kernels cannot run here.");
  nb::class_<CudaCallPlan>(m, "CudaCall",
                           "The arguments of a CUDA call, classified (and staged, in a call): what a tuning run "
                           "reads.")
      .def_prop_ro("signature", &CudaCallPlan::signature)
      .def_prop_ro("array_shapes", &CudaCallPlan::array_shapes, "The shapes of the array arguments, in order.")
      .def_prop_ro("stream", &CudaCallPlan::stream)
      .def_prop_ro("values", &CudaCallPlan::values,
                   "Per argument: (pointer, shape, strides in elements) for arrays (a NumPy array's host address "
                   "until it is staged), else the scalar.")
      .def("copied_values", &CudaCallPlan::copied_values,
           "(values, restore): the values with every array in a GPU copy of its own, arrays that share memory "
           "sharing their copy; restore() queues a copy of the originals into them.");
  nb::class_<DeviceCopies>(m, "DeviceCopies").def("__call__", &DeviceCopies::restore);
}

}  // namespace plait::python
