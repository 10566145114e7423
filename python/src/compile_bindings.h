// Compiling kernels for plait._core: the C++ driver called with the
// function's source, signature and options from plait.jit, and the disk
// cache's records (the autotuner's choices).
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernel_object.h"

namespace plait::python {

// PLAIT_PARALLEL_THRESHOLD, read once: the work (trip count x IR nodes) at
// which a parallel loop starts its threads.
int64_t parallel_work_threshold();

// Compiles `name` of the source text for the signature and options, with
// the functions it calls (plait/dispatcher.py, collect_globals); raises the
// Python classes of compile and internal errors.
Kernel compile(const std::string& path, const std::string& text, int first_line, const std::string& name,
               const std::string& signature_text, nanobind::dict modules, nanobind::dict constants, bool boundscheck,
               bool fastmath, bool disk_cache, const std::string& cache_dir, const std::string& dump_dir,
               const std::string& cxx, const std::string& target, bool auto_simd, int cuda_threads, int cuda_row_groups,
               int cuda_max_team, const std::string& fusion, nanobind::dict functions, nanobind::dict callees,
               const std::vector<std::string>& disabled_passes);

// Records of the disk cache in the directory the kernels of `cache_dir` use.
nanobind::object lookup_record(const std::string& key, const std::string& cache_dir);
void store_record(const std::string& key, const std::string& text, const std::string& cache_dir);

}  // namespace plait::python
