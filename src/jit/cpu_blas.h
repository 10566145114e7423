// The CPU's BLAS: the library CPU kernels' matrix products call through
// plait_context::blas (runtime/abi.h), loaded with dlopen on first use (no
// header or link-time dependency), as cuBLAS is for CUDA kernels. Searched
// for: $PLAIT_BLAS (a file name or path; "none" turns the library off, read
// at each call), then
// OpenBLAS (libopenblas.so.0; the project installs Debian's
// libopenblas0-openmp, whose threads are the process's OpenMP threads: a
// product inside a parallel loop runs in its thread, one outside uses the
// team), then BLIS (libblis.so.4). The reference BLAS (libblas.so.3) is not
// taken: its unblocked product is slower than the kernels' own loops.
#pragma once

#include <string>

#include "runtime/abi.h"

namespace plait::jit {

// The table for plait_context::blas; null with PLAIT_BLAS=none. Its entries
// load the library on their first call and decline (the loops run) when
// none loads.
const plait_blas_api* cpu_blas_api();

// The library in use ("OpenBLAS 0.3.21 (OpenMP) from libopenblas.so.0"), or
// why there is none, for explain() and the benchmarks.
std::string cpu_blas_description();

}  // namespace plait::jit
