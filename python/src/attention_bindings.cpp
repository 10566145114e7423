// The sparse attention part of plait._core (attention_bindings.h).
#include "attention_bindings.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "jit/cuda_sparse_attention.h"
#include "runtime/attention_tiles.h"
#include "tensor/affine_tiles.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace plait::python {

namespace {

nb::bytes as_bytes(const std::vector<int32_t>& v) {
  return nb::bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int32_t));
}

// parts: per part (first, stride, count), each the bytes of `rows` int64s.
// The tiles are the fused kernel's (runtime/attention_tiles.h).
nb::dict affine_tiles(int64_t rows, int64_t columns,
                      const std::vector<std::tuple<nb::bytes, nb::bytes, nb::bytes>>& parts) {
  std::vector<tensor::AffinePart> views;
  for (const auto& [first, stride, count] : parts) {
    for (const nb::bytes* b : {&first, &stride, &count})
      if (b->size() != static_cast<size_t>(rows) * sizeof(int64_t))
        throw std::invalid_argument("affine_tiles: each part holds one int64 per row");
    views.push_back({reinterpret_cast<const int64_t*>(first.c_str()), reinterpret_cast<const int64_t*>(stride.c_str()),
                     reinterpret_cast<const int64_t*>(count.c_str())});
  }
  const tensor::AffineTiles plan =
      tensor::plan_affine_tiles(rows, columns, views, runtime::kTileRows, runtime::kTileKeys);
  nb::dict out;
  out["rows"] = as_bytes(plan.rows);
  out["tiles"] = as_bytes(plan.tiles);
  out["row_parts"] = as_bytes(plan.row_parts);
  out["tile_count"] = plan.tile_count();
  out["tile_rows"] = plan.tile_rows;
  out["slots"] = plan.slots;
  out["split_groups"] = plan.split_groups;
  out["kept"] = plan.kept;
  out["computed"] = plan.computed;
  out["description"] = tensor::describe(plan);
  return out;
}

using Strides = std::tuple<int64_t, int64_t, int64_t>;

void sparse_attention(const std::string& dtype, int head_dim, uintptr_t q, Strides qs, uintptr_t k, Strides ks,
                      uintptr_t v, Strides vs, uintptr_t out, Strides os, int64_t batch, int64_t heads, double scale,
                      uintptr_t rows, uintptr_t tiles, uintptr_t row_parts, int64_t tile_count, uintptr_t partials,
                      uintptr_t counters, int64_t slots, int64_t split_groups, uintptr_t stream) {
  jit::SparseAttentionCall c;
  if (dtype == "bfloat16") {
    c.type = jit::HalfType::BFloat16;
  } else if (dtype == "float16") {
    c.type = jit::HalfType::Float16;
  } else {
    throw std::invalid_argument("the fused attention kernel takes bfloat16 or float16, got " + dtype);
  }
  c.head_dim = head_dim;
  c.q = q;
  c.k = k;
  c.v = v;
  c.out = out;
  auto set = [](int64_t* to, const Strides& s) { std::tie(to[0], to[1], to[2]) = s; };
  set(c.q_strides, qs);
  set(c.k_strides, ks);
  set(c.v_strides, vs);
  set(c.out_strides, os);
  c.batch = batch;
  c.heads = heads;
  c.scale = scale;
  c.rows = rows;
  c.tiles = tiles;
  c.row_parts = row_parts;
  c.tile_count = tile_count;
  c.partials = partials;
  c.counters = counters;
  c.slots = slots;
  c.split_groups = split_groups;
  c.stream = stream;
  jit::run_sparse_attention(c);
}

}  // namespace

void define_attention_bindings(nb::module_& m) {
  m.def("affine_tiles", &affine_tiles, "rows"_a, "columns"_a, "parts"_a,
        "The tile plan of an affine pattern: a dict of rows, tiles and row_parts (bytes of int32), tile_count, "
        "slots, split_groups, kept, computed and description (tensor/affine_tiles.h).");
  m.def("sparse_attention", &sparse_attention, "dtype"_a, "head_dim"_a, "q"_a, "q_strides"_a, "k"_a, "k_strides"_a,
        "v"_a, "v_strides"_a, "out"_a, "out_strides"_a, "batch"_a, "heads"_a, "scale"_a, "rows"_a, "tiles"_a,
        "row_parts"_a, "tile_count"_a, "partials"_a, "counters"_a, "slots"_a, "split_groups"_a, "stream"_a,
        "Queues the fused attention kernel over a tile plan on `stream` (jit/cuda_sparse_attention.h).");
  m.def("sparse_attention_head_dim_supported", &jit::sparse_attention_head_dim_supported, "head_dim"_a);
}

}  // namespace plait::python
