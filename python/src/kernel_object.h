// Compiled kernels as Python objects (plait._core.Kernel): for inspection
// and CUDA calls; CPU calls go through the Dispatcher (core_module.cpp).
#pragma once

#include <memory>

#include "driver/compiler.h"

namespace plait::python {

using KernelPtr = std::shared_ptr<const plait::CompiledKernel>;

struct Kernel {
  KernelPtr compiled;
};

}  // namespace plait::python
