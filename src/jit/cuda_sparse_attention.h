// The fused attention kernel over affine sparse patterns
// (runtime/cuda_sparse_attention.cuh): built by NVRTC once per head
// dimension and element type (through the disk cache), launched over a plan
// of tiles (tensor/affine_tiles.h) with batches and heads in its grid. A
// kernel of the runtime library, as the cuBLAS entries are for dense
// products: the compiler's own operator programs are the unfused path.
#pragma once

#include <cstdint>
#include <string>

namespace plait::jit {

enum class HalfType : uint8_t { BFloat16, Float16 };

// q, k, v, out: device addresses of (batch, heads, rows, head_dim) arrays,
// the last dimension contiguous, 16-byte aligned, with their batch, head
// and row strides in elements (multiples of 8).
struct SparseAttentionCall {
  HalfType type = HalfType::BFloat16;
  int head_dim = 0;
  uintptr_t q = 0, k = 0, v = 0, out = 0;
  int64_t q_strides[3] = {}, k_strides[3] = {}, v_strides[3] = {}, out_strides[3] = {};
  int64_t batch = 0, heads = 0;
  double scale = 1.0;
  // The plan's arrays on the device (AffineTiles::rows, tiles, row_parts), int32.
  uintptr_t rows = 0, tiles = 0, row_parts = 0;
  int64_t tile_count = 0;
  // For a plan that splits long tiles (AffineTiles::split_groups > 0): per
  // (batch, head), `slots` slots of runtime::kTileRows x (head_dim + 2) floats, and
  // `split_groups` int32 counters, zeros.
  uintptr_t partials = 0, counters = 0;
  int64_t slots = 0, split_groups = 0;
  uintptr_t stream = 0;
};

// The kernel's device source for one element type and head dimension.
std::string sparse_attention_source(HalfType type, int head_dim);

// Whether the kernel takes this head dimension (a multiple of 16, at most 128).
bool sparse_attention_head_dim_supported(int head_dim);

// Queues the kernel on the call's stream. Throws std::invalid_argument for
// a call outside the kernel's limits, InternalError for the driver's errors.
void run_sparse_attention(const SparseAttentionCall& call);

}  // namespace plait::jit
