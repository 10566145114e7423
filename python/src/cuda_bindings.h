// The CUDA part of plait._core: device memory for plait/cuda.py (the calls
// of CUDA kernels, which share the CPU call path's conversions of scalars and
// results, are in core_module.cpp).
#pragma once

#include <nanobind/nanobind.h>

#include <cstddef>
#include <cstdint>

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

// Defines the module's device-memory functions (device_alloc, copies,
// synchronize, cuda_device, cuda_unavailable_reason).
void define_cuda_bindings(nanobind::module_& m);

}  // namespace plait::python
