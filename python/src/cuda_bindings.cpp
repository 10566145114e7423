// The CUDA part of plait._core (cuda_bindings.h).
#include "cuda_bindings.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <vector>

#include "jit/cuda_runtime.h"
#include "module_errors.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace plait::python {

namespace {

// ---------------------------------------------------------------------------
// CUDA target (begin): calls of CUDA kernels and device memory for
// plait/cuda.py. The argument and result handling of CUDA kernels is in
// Python (CuPy, PyTorch and NumPy arrays); this part only converts
// already-classified values.

std::unique_ptr<DeviceBuffer> device_alloc(size_t nbytes) {
  auto buffer = std::make_unique<DeviceBuffer>();
  try {
    buffer->pointer = plait::jit::device_alloc(nbytes);
  } catch (const std::exception& e) {
    rethrow_as_python(e);
  }
  buffer->nbytes = nbytes;
  return buffer;
}

// A writable or readable C-contiguous buffer of a Python object.
struct HostBuffer {
  Py_buffer view{};
  explicit HostBuffer(nb::handle object, bool writable) {
    if (PyObject_GetBuffer(object.ptr(), &view, (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS) != 0)
      throw nb::python_error();
  }
  ~HostBuffer() { PyBuffer_Release(&view); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
};

void copy_to_device(uintptr_t dst, nb::handle host, uintptr_t stream) {
  HostBuffer buffer(host, false);
  try {
    nb::gil_scoped_release release;
    plait::jit::copy_host_to_device(dst, buffer.view.buf, static_cast<size_t>(buffer.view.len), stream);
  } catch (const std::exception& e) {
    rethrow_as_python(e);
  }
}

void copy_to_host(nb::handle host, uintptr_t src, uintptr_t stream) {
  HostBuffer buffer(host, true);
  try {
    nb::gil_scoped_release release;
    plait::jit::copy_device_to_host(buffer.view.buf, src, static_cast<size_t>(buffer.view.len), stream);
  } catch (const std::exception& e) {
    rethrow_as_python(e);
  }
}

void copy_device(uintptr_t dst, uintptr_t src, size_t nbytes, uintptr_t stream) {
  try {
    plait::jit::copy_device_to_device(dst, src, nbytes, stream);
  } catch (const std::exception& e) {
    rethrow_as_python(e);
  }
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

void define_cuda_bindings(nb::module_& m) {
  m.def("cuda_unavailable_reason", &plait::jit::cuda_unavailable_reason,
        "'' when CUDA kernels can run here, else what is missing.");
  m.def("cuda_device", &cuda_device, "The GPU plait uses: ordinal, arch (90 for sm_90), multiprocessors, name.");
  nb::class_<DeviceBuffer>(m, "DeviceBuffer")
      .def_prop_ro("pointer", [](const DeviceBuffer& b) { return b.pointer; })
      .def_prop_ro("nbytes", [](const DeviceBuffer& b) { return b.nbytes; });
  m.def("device_alloc", &device_alloc, "nbytes"_a, "Allocates GPU memory, freed with the returned DeviceBuffer.");
  m.def("copy_to_device", &copy_to_device, "dst"_a, "host"_a, "stream"_a,
        "Copies a C-contiguous host buffer to GPU memory and waits.");
  m.def("copy_to_host", &copy_to_host, "host"_a, "src"_a, "stream"_a,
        "Copies GPU memory into a writable C-contiguous host buffer and waits.");
  m.def("copy_device", &copy_device, "dst"_a, "src"_a, "nbytes"_a, "stream"_a, "Copies GPU memory (queued).");
  m.def("synchronize", &synchronize, "stream"_a, "Waits for the stream.");
}
// CUDA target (end)

}  // namespace plait::python
