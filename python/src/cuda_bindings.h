// The CUDA part of plait._core: device memory, and the copies between NumPy
// arrays and GPU memory that the call path (cuda_call_plan.h) and
// plait.to_device / plait.to_host share.
#pragma once

#include <nanobind/nanobind.h>

#include "numpy_api.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "jit/cuda_runtime.h"
#include "kernel_object.h"

namespace plait::python {

// Device memory owned by Python: a plain allocation, or an array a kernel
// allocated and returned (freed through its result's release function).
struct DeviceBuffer {
  uintptr_t pointer = 0;
  size_t nbytes = 0;
  void* owner = nullptr;             // kernel result owner, or null
  void (*release)(void*) = nullptr;  // its release function
  KernelPtr kernel;                  // keeps the kernel's library loaded for `release`

  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (owner != nullptr && release != nullptr) {
      release(owner);
    } else if (owner == nullptr && pointer != 0) {
      plait::jit::device_free(pointer);
    }
  }
};

// New GPU memory, freed with the buffer.
std::unique_ptr<DeviceBuffer> new_device_buffer(size_t nbytes);

// A strided view of GPU memory: its address, extents and strides in
// elements.
struct StridedView {
  uintptr_t pointer = 0;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

// The element strides of byte strides; raises TypeError for one that is not
// a multiple of the item size.
std::vector<int64_t> element_strides(nanobind::handle byte_strides, nanobind::handle itemsize);
// The view a __cuda_array_interface__ describes (C order when it gives no
// strides), and its dtype as NumPy's.
StridedView read_array_interface(nanobind::handle interface, nanobind::object& dtype);

// Copies a NumPy array to new GPU memory, C- or Fortran-ordered as the array
// is (C when it is neither: `fortran` says which), on `stream`, and waits.
std::unique_ptr<DeviceBuffer> copy_array_to_device(PyArrayObject* array, uintptr_t stream, bool& fortran);
// A NumPy copy of a strided view of GPU memory (in the view's order, as
// np.array keeps it); waits for the copy.
nanobind::object copy_view_to_host(uintptr_t pointer, int ndim, const int64_t* shape, const int64_t* strides,
                                   PyArray_Descr* dtype, uintptr_t stream);
// Copies a strided view of GPU memory, with the shape and dtype of `host`,
// into that NumPy array; waits for the copy.
void copy_view_into(PyArrayObject* host, uintptr_t pointer, const int64_t* strides, uintptr_t stream);

// Defines the module's device-memory functions (device_alloc, copies,
// synchronize, cuda_device, cuda_unavailable_reason) and the copies of
// plait.to_device / plait.to_host.
void define_cuda_bindings(nanobind::module_& m);

}  // namespace plait::python
