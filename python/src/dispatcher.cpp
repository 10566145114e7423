// plait._core.Dispatcher (dispatcher.h): its call slot, the checks both
// targets' call paths share, and its methods for plait/dispatcher.py.
#include "dispatcher.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "numpy_api.h"

#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "argument_types.h"
#include "cuda_call_plan.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace plait::python {

namespace {

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

}  // namespace

bool is_scipy_sparse(PyObject* obj) {
  return PyObject_HasAttrString(obj, "tocsr") == 1 && PyObject_HasAttrString(obj, "format") == 1;
}

[[noreturn]] void raise_argument_error(const Dispatcher& d, size_t index, const std::string& why) {
  const std::string param = index < d.params.size() ? d.params[index] : std::to_string(index);
  const std::string message = d.name + "() argument '" + param + "' " + why;
  PyErr_SetString(PyExc_TypeError, message.c_str());
  throw nb::python_error();
}

void refuse_masked_array(const Dispatcher& d, size_t index, PyObject* obj) {
  if (Py_TYPE(obj) != &PyArray_Type && is_masked_array(obj)) {
    raise_argument_error(d, index,
                         "is a masked array (numpy.ma.MaskedArray); plait kernels would ignore its mask: pass its "
                         ".data, or .filled(value)");
  }
}

void check_writes(const Dispatcher& d, const plait::CompiledKernel& kernel, PyObject* const* args,
                  const std::string& key) {
  for (size_t i = 0; i < key.size() && i < kernel.writes_param.size(); ++i) {
    // A CUDA call's GPU arrays have array codes too; they are not checked.
    if (!kernel.writes_param[i] || !is_array_code(static_cast<uint8_t>(key[i])) || !PyArray_Check(args[i])) continue;
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

PyObject* fold_declared_results(const plait::CompiledKernel& kernel, PyObject* results, PyObject* args) {
  if (results == nullptr || kernel.declared_results.empty()) return results;
  nb::object arrays = nb::steal(results);
  nb::list declared;
  for (const auto& t : kernel.declared_results) declared.append(plait::to_string(t));
  // Kept for the process (released, never destroyed: the interpreter may be finalizing at exit).
  static const nb::handle fold = nb::object(nb::module_::import_("plait.sparse_calls").attr("fold_results")).release();
  return fold(declared, kernel.declared_tuple, kernel.declared_list, arrays, nb::handle(args)).release().ptr();
}

const KernelPtr& compile_for_key(Dispatcher& d, PyObject* self, const std::string& key) {
  nb::object kernel = nb::borrow(self).attr("_compile")(signature_of(key));
  return d.table.emplace(key, nb::cast<Kernel&>(kernel).compiled).first->second;
}

namespace {

PyObject* call_with(Dispatcher& d, PyObject* self, PyObject* args) {
  return d.cuda ? call_cuda(d, self, args) : call_cpu(d, self, args);
}

PyObject* dispatcher_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  if (!nb::inst_ready(self)) {
    PyErr_SetString(PyExc_RuntimeError, "plait dispatcher used before its __init__ ran");
    return nullptr;
  }
  Dispatcher& d = *nb::inst_ptr<Dispatcher>(self);
  try {
    // Without CUDA, a call says so before anything else.
    if (d.cuda) require_cuda();
    if (static_cast<size_t>(PyTuple_GET_SIZE(args)) == d.params.size() &&
        (kwargs == nullptr || PyDict_GET_SIZE(kwargs) == 0)) {
      return call_with(d, self, args);
    }
    // Keywords or defaults: Python binds the call to the full argument list.
    nb::object bound =
        nb::borrow(self).attr("_bind")(nb::handle(args), kwargs ? nb::handle(kwargs) : nb::handle(Py_None));
    if (!PyTuple_Check(bound.ptr()) || static_cast<size_t>(PyTuple_GET_SIZE(bound.ptr())) != d.params.size()) {
      PyErr_SetString(PyExc_RuntimeError, "plait dispatcher: _bind returned a wrong argument tuple");
      return nullptr;
    }
    return call_with(d, self, bound.ptr());
  } catch (nb::python_error& e) {
    e.restore();
    return nullptr;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

PyType_Slot dispatcher_slots[] = {{Py_tp_call, reinterpret_cast<void*>(dispatcher_call)}, {0, nullptr}};

}  // namespace

void define_dispatcher(nb::module_& m) {
  nb::class_<Dispatcher>(m, "Dispatcher", nb::type_slots(dispatcher_slots))
      .def(nb::init<>())
      .def(
          "_setup",
          [](Dispatcher& d, std::string name, std::string path, std::vector<std::string> params, int num_threads,
             const std::string& target) {
            d.name = std::move(name);
            d.path = std::move(path);
            d.params = std::move(params);
            d.num_threads = num_threads < 1 ? 1 : num_threads;
            d.cuda = target == "cuda";
          },
          "name"_a, "path"_a, "params"_a, "num_threads"_a, "target"_a = "cpu")
      .def_prop_rw(
          "num_threads", [](const Dispatcher& d) { return d.num_threads; },
          [](Dispatcher& d, int n) {
            if (n < 1) throw nb::value_error("num_threads must be at least 1");
            d.num_threads = n;
          })
      .def_rw("_tuned", &Dispatcher::tuned,
              "A tuned CUDA kernel: each call asks _tuned_kernel(plan) for the kernel of its shape class.")
      .def(
          "_register",
          [](Dispatcher& d, const Kernel& kernel) {
            std::string key;
            for (const auto& type : kernel.compiled->signature.abi().args)
              key.push_back(static_cast<char>(encode(type)));
            d.table.emplace(key, kernel.compiled);
          },
          "kernel"_a, "Makes calls whose argument types match the kernel's signature use it.")
      .def(
          "_signature_of",
          [](const Dispatcher& d, nb::args args) { return d.cuda ? cuda_signature(d, args) : cpu_signature(d, args); },
          "The signature a call with these (complete) arguments is compiled for.")
      .def(
          "_cuda_call_plan", [](const Dispatcher& d, nb::args args) { return std::make_unique<CudaCallPlan>(d, args); },
          "The plan of a CUDA call with these (complete) arguments: classified, NumPy arrays not yet copied.");
}

}  // namespace plait::python
