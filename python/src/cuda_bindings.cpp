// The CUDA part of plait._core (cuda_bindings.h).
#include "cuda_bindings.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>

#include <memory>
#include <string>
#include <vector>

#include "argument_types.h"
#include "jit/cuda_runtime.h"
#include "module_errors.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace plait::python {

namespace {

// A NumPy array viewing a host copy of the elements a strided view of GPU
// memory spans, with the view's strides; an empty array when the view is.
nb::object host_image(uintptr_t pointer, int ndim, const int64_t* shape, const int64_t* strides, PyArray_Descr* dtype,
                      uintptr_t stream) {
  std::vector<npy_intp> dims(shape, shape + ndim);
  npy_intp low = 0;
  npy_intp high = 0;
  bool empty = false;
  for (int k = 0; k < ndim; ++k) {
    empty = empty || shape[k] == 0;
    const npy_intp extent = (shape[k] - 1) * strides[k];
    (extent < 0 ? low : high) += extent;
  }
  if (empty) {
    Py_INCREF(dtype);  // PyArray_Empty takes a reference
    PyObject* array = PyArray_Empty(ndim, dims.data(), dtype, 0);
    if (array == nullptr) throw nb::python_error();
    return nb::steal(array);
  }
  npy_intp count = high - low + 1;
  const npy_intp itemsize = PyDataType_ELSIZE(dtype);
  Py_INCREF(dtype);
  nb::object flat = nb::steal(PyArray_SimpleNewFromDescr(1, &count, dtype));
  if (!flat.is_valid()) throw nb::python_error();
  void* data = PyArray_DATA(reinterpret_cast<PyArrayObject*>(flat.ptr()));
  try {
    nb::gil_scoped_release release;
    plait::jit::copy_device_to_host(data, pointer + static_cast<uintptr_t>(low * itemsize),
                                    static_cast<size_t>(count * itemsize), stream);
  } catch (const std::exception& e) {
    rethrow_as_python(e);
  }
  std::vector<npy_intp> byte_strides(static_cast<size_t>(ndim));
  for (int k = 0; k < ndim; ++k) byte_strides[static_cast<size_t>(k)] = strides[k] * itemsize;
  Py_INCREF(dtype);
  PyObject* view = PyArray_NewFromDescr(&PyArray_Type, dtype, ndim, dims.data(), byte_strides.data(),
                                        static_cast<char*>(data) - low * itemsize, 0, nullptr);
  if (view == nullptr) throw nb::python_error();
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(view), flat.release().ptr()) < 0) {
    Py_DECREF(view);
    throw nb::python_error();
  }
  return nb::steal(view);
}

std::vector<int64_t> int_sequence(nb::handle sequence) {
  std::vector<int64_t> values;
  for (nb::handle value : sequence) values.push_back(nb::cast<int64_t>(nb::int_(value)));
  return values;
}

PyArray_Descr* numpy_dtype(nb::handle dtype) {
  if (!PyArray_DescrCheck(dtype.ptr())) throw nb::type_error("expected a NumPy dtype");
  return reinterpret_cast<PyArray_Descr*>(dtype.ptr());
}

// plait.to_device's copy: (DeviceBuffer, strides in elements).
nb::tuple array_to_device(nb::handle host) {
  if (!PyArray_Check(host.ptr())) throw nb::type_error("expected a NumPy array");
  PyArrayObject* array = reinterpret_cast<PyArrayObject*>(host.ptr());
  if (dtype_code(PyArray_DESCR(array)) < 0) {
    const std::string message =
        "plait.to_device: unsupported dtype " +
        nb::cast<std::string>(nb::str(nb::handle(reinterpret_cast<PyObject*>(PyArray_DESCR(array))))) +
        "; CUDA kernels take " + kElementTypeNames + " arrays";
    throw nb::type_error(message.c_str());
  }
  bool fortran = false;
  std::unique_ptr<DeviceBuffer> buffer = copy_array_to_device(array, 0, fortran);
  const int ndim = PyArray_NDIM(array);
  std::vector<int64_t> shape(PyArray_DIMS(array), PyArray_DIMS(array) + ndim);
  std::vector<int64_t> strides(static_cast<size_t>(ndim));
  write_canonical_strides(fortran ? plait::Layout::F : plait::Layout::C, ndim, shape.data(), strides.data());
  nb::list stride_list;
  for (int64_t s : strides) stride_list.append(s);
  return nb::make_tuple(std::move(buffer), nb::tuple(stride_list));
}

// plait.to_host's copy of a GPU array that only __cuda_array_interface__
// describes, once the legacy default stream is done with it.
nb::object interface_to_host(nb::handle interface) {
  nb::object dtype;
  const StridedView view = read_array_interface(interface, dtype);
  try {
    nb::gil_scoped_release release;
    plait::jit::synchronize(0);
  } catch (const std::exception& e) {
    rethrow_as_python(e);
  }
  return copy_view_to_host(view.pointer, static_cast<int>(view.shape.size()), view.shape.data(), view.strides.data(),
                           numpy_dtype(dtype), 0);
}

void synchronize(uintptr_t stream) {
  try {
    nb::gil_scoped_release release;
    plait::jit::synchronize(stream);
  } catch (const std::exception& e) {
    rethrow_as_python(e);
  }
}

nb::dict cuda_device() {
  plait::jit::CudaDeviceInfo info;
  try {
    info = plait::jit::cuda_device();
  } catch (const std::exception& e) {
    rethrow_as_python(e);
  }
  nb::dict out;
  out["ordinal"] = info.ordinal;
  out["arch"] = info.arch;
  out["multiprocessors"] = info.multiprocessors;
  out["name"] = info.name;
  return out;
}

}  // namespace

std::unique_ptr<DeviceBuffer> new_device_buffer(size_t nbytes) {
  auto buffer = std::make_unique<DeviceBuffer>();
  try {
    buffer->pointer = plait::jit::device_alloc(nbytes);
  } catch (const std::exception& e) {
    rethrow_as_python(e);
  }
  buffer->nbytes = nbytes;
  return buffer;
}

std::vector<int64_t> element_strides(nb::handle byte_strides, nb::handle itemsize) {
  std::vector<int64_t> strides;
  for (nb::handle stride : byte_strides) {
    nb::object remainder = nb::steal(PyNumber_Remainder(stride.ptr(), itemsize.ptr()));
    if (!remainder.is_valid()) throw nb::python_error();
    if (nb::cast<bool>(nb::bool_(remainder))) {
      const std::string message = "a GPU array with byte stride " + nb::cast<std::string>(nb::str(stride)) +
                                  " that is not a multiple of its item size " +
                                  nb::cast<std::string>(nb::str(itemsize));
      throw nb::type_error(message.c_str());
    }
    strides.push_back(nb::cast<int64_t>(nb::int_(stride)) / nb::cast<int64_t>(itemsize));
  }
  return strides;
}

StridedView read_array_interface(nb::handle interface, nb::object& dtype) {
  nb::object typestr = interface["typestr"];
  dtype = nb::handle(reinterpret_cast<PyObject*>(&PyArrayDescr_Type))(typestr);
  StridedView view;
  nb::object shape = interface["shape"];
  view.shape = int_sequence(shape);
  nb::object data = interface["data"];
  nb::object pointer = data[0];
  view.pointer = nb::cast<uintptr_t>(nb::int_(pointer));
  nb::object byte_strides = interface.attr("get")("strides");
  if (byte_strides.is_none()) {
    view.strides.resize(view.shape.size());
    write_canonical_strides(plait::Layout::C, static_cast<int>(view.shape.size()), view.shape.data(),
                            view.strides.data());
  } else {
    view.strides = element_strides(byte_strides, dtype.attr("itemsize"));
  }
  return view;
}

std::unique_ptr<DeviceBuffer> copy_array_to_device(PyArrayObject* array, uintptr_t stream, bool& fortran) {
  nb::object contiguous;  // a C-ordered copy of an array that is neither C- nor F-contiguous
  if (!(PyArray_FLAGS(array) & (NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_F_CONTIGUOUS))) {
    contiguous = nb::steal(PyArray_NewCopy(array, NPY_CORDER));
    if (!contiguous.is_valid()) throw nb::python_error();
    array = reinterpret_cast<PyArrayObject*>(contiguous.ptr());
  }
  // A Fortran-ordered array's bytes are those of its C-ordered transpose.
  fortran = !(PyArray_FLAGS(array) & NPY_ARRAY_C_CONTIGUOUS);
  const size_t nbytes = static_cast<size_t>(PyArray_NBYTES(array));
  std::unique_ptr<DeviceBuffer> buffer = new_device_buffer(nbytes);
  try {
    nb::gil_scoped_release release;
    plait::jit::copy_host_to_device(buffer->pointer, PyArray_DATA(array), nbytes, stream);
  } catch (const std::exception& e) {
    rethrow_as_python(e);
  }
  return buffer;
}

nb::object copy_view_to_host(uintptr_t pointer, int ndim, const int64_t* shape, const int64_t* strides,
                             PyArray_Descr* dtype, uintptr_t stream) {
  nb::object image = host_image(pointer, ndim, shape, strides, dtype, stream);
  if (PyArray_SIZE(reinterpret_cast<PyArrayObject*>(image.ptr())) == 0) return image;
  PyObject* copy = PyArray_NewCopy(reinterpret_cast<PyArrayObject*>(image.ptr()), NPY_KEEPORDER);
  if (copy == nullptr) throw nb::python_error();
  return nb::steal(copy);
}

void copy_view_into(PyArrayObject* host, uintptr_t pointer, const int64_t* strides, uintptr_t stream) {
  const int ndim = PyArray_NDIM(host);
  std::vector<int64_t> shape(PyArray_DIMS(host), PyArray_DIMS(host) + ndim);
  nb::object image = host_image(pointer, ndim, shape.data(), strides, PyArray_DESCR(host), stream);
  if (PyArray_CopyInto(host, reinterpret_cast<PyArrayObject*>(image.ptr())) < 0) throw nb::python_error();
}

void define_cuda_bindings(nb::module_& m) {
  m.def("cuda_unavailable_reason", &plait::jit::cuda_unavailable_reason,
        "'' when CUDA kernels can run here, else what is missing.");
  m.def("cuda_device", &cuda_device, "The GPU plait uses: ordinal, arch (90 for sm_90), multiprocessors, name.");
  nb::class_<DeviceBuffer>(m, "DeviceBuffer")
      .def_prop_ro("pointer", [](const DeviceBuffer& b) { return b.pointer; })
      .def_prop_ro("nbytes", [](const DeviceBuffer& b) { return b.nbytes; });
  m.def("synchronize", &synchronize, "stream"_a, "Waits for the stream.");
  m.def("array_to_device", &array_to_device, "array"_a,
        "Copies a NumPy array to new GPU memory (C- or Fortran-ordered as it is, C when neither) and returns "
        "(DeviceBuffer, strides in elements); TypeError for a dtype kernels do not take.");
  m.def(
      "copy_view_to_host",
      [](uintptr_t pointer, nb::handle shape, nb::handle strides, nb::handle dtype, uintptr_t stream) {
        const std::vector<int64_t> dims = int_sequence(shape);
        const std::vector<int64_t> steps = int_sequence(strides);
        if (steps.size() != dims.size()) throw nb::value_error("copy_view_to_host: shape and strides differ in length");
        return copy_view_to_host(pointer, static_cast<int>(dims.size()), dims.data(), steps.data(), numpy_dtype(dtype),
                                 stream);
      },
      "pointer"_a, "shape"_a, "strides"_a, "dtype"_a, "stream"_a,
      "A NumPy copy of a strided view of GPU memory (strides in elements).");
  m.def("interface_to_host", &interface_to_host, "interface"_a,
        "A NumPy copy of the GPU array a __cuda_array_interface__ describes, after the legacy default stream.");
}

}  // namespace plait::python
