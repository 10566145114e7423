// The sparse attention part of plait._core: the tile plan of an affine
// pattern (tensor/affine_tiles.h) and the fused kernel's launch
// (jit/cuda_sparse_attention.h), for plait.attention.
#pragma once

#include <nanobind/nanobind.h>

namespace plait::python {

void define_attention_bindings(nanobind::module_& m);

}  // namespace plait::python
