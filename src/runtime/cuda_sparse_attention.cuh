// Fused attention over an affine sparse pattern (ACSR) on tensor cores: one
// kernel computes softmax(scale * q k^T at the pattern's entries) v, flash
// style (scores live in registers, never in memory; the softmax is online).
// Compiled by NVRTC (no standard headers) after two definitions the launcher
// (jit/cuda_sparse_attention.cpp) prints before this text:
//   PLAIT_ATTENTION_D     the head dimension: a multiple of 16, at most 128
//   PLAIT_ATTENTION_BF16  1: bfloat16 operands, 0: float16 (accumulation is float32)
//
// The launcher's plan (tensor/affine_tiles.h) groups query rows whose parts
// have the same stride and the same column residue, 64 rows to a tile: the
// kept columns of a tile's part then lie on one progression
// lo + stride * u, u < ncols, so keys are gathered into dense tiles of 64
// and the tensor cores multiply only columns some row of the tile keeps. A
// row keeps u in [(first - lo) / stride, that + count): the mask is two
// comparisons, no mask function and no per-entry index.
//
// Block: 4 warps, 16 query rows each; grid (batch * heads, tiles). The MMA
// is mma.sync m16n8k16 (row.col, fp32 accumulate): the fragment of S = Q K^T
// that a thread holds is, two tiles of 8 columns at a time, the A operand of
// P V (the softmax's probabilities never leave the thread).

typedef unsigned short plait_half_bits;

namespace plait_attention {

constexpr int kD = PLAIT_ATTENTION_D;
constexpr int kRows = 64;         // query rows per block (16 per warp)
constexpr int kKeys = 64;         // keys per tile
constexpr int kThreads = 128;
constexpr int kStride = kD + 8;   // halves per shared row: 16 bytes of padding keep fragment loads free of conflicts
constexpr int kChunks = kD / 8;   // 16-byte chunks per row

__device__ __forceinline__ float minus_inf() { return __int_as_float(0xff800000u); }

static_assert(kD % 16 == 0 && kD >= 16 && kD <= 128, "the head dimension is a multiple of 16, at most 128");

__device__ __forceinline__ unsigned pack(float lo, float hi) {
  unsigned r;
#if PLAIT_ATTENTION_BF16
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#endif
  return r;
}

// c += a b for a 16x16 A fragment and a 16x8 B fragment.
__device__ __forceinline__ void mma(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#if PLAIT_ATTENTION_BF16
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

__device__ __forceinline__ unsigned shared_address(const void* p) {
  unsigned a;
  asm("{ .reg .u64 g; cvta.to.shared.u64 g, %1; cvt.u32.u64 %0, g; }" : "=r"(a) : "l"(p));
  return a;
}

// Four 8x8 matrices of halves from shared memory, transposed (the B
// fragments of two 16x8 tiles of a row-major keys x dims tile).
__device__ __forceinline__ void load_transposed(unsigned (&r)[4], const plait_half_bits* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

__device__ __forceinline__ unsigned word(const plait_half_bits* p) {
  return *reinterpret_cast<const unsigned*>(p);
}

struct uint4_ {
  unsigned x, y, z, w;
};

// Rows of a (batch, head) slice of q, k or v into shared memory, 16 bytes at
// a time: `count` rows, row r from `source(r)` (null: zeros).
template <typename Source>
__device__ __forceinline__ void load_rows(plait_half_bits* tile, int count, Source source) {
  for (int at = threadIdx.x; at < count * kChunks; at += kThreads) {
    const int r = at / kChunks, chunk = at % kChunks;
    const plait_half_bits* from = source(r);
    uint4_ value = {0, 0, 0, 0};
    if (from) value = *reinterpret_cast<const uint4_*>(from + chunk * 8);
    *reinterpret_cast<uint4_*>(tile + r * kStride + chunk * 8) = value;
  }
}

}  // namespace plait_attention

// q, k, v, out: (batch, heads, rows, kD) with the last dimension contiguous;
// strides in elements, each a multiple of 8, the arrays 16-byte aligned.
// rows: the query rows in tile order. tiles: per tile its first position in
// `rows`, its row count, and per part (2) the first column, stride and
// column count of its progression. parts: per query row, per part, its first
// column and count.
extern "C" __global__ void __launch_bounds__(128)
    plait_sparse_attention(const plait_half_bits* __restrict__ q, long long q_batch, long long q_head, long long q_row,
                           const plait_half_bits* __restrict__ k, long long k_batch, long long k_head, long long k_row,
                           const plait_half_bits* __restrict__ v, long long v_batch, long long v_head, long long v_row,
                           plait_half_bits* __restrict__ out, long long o_batch, long long o_head, long long o_row,
                           int heads, float scale_log2, const int* __restrict__ rows, const int* __restrict__ tiles,
                           const int* __restrict__ parts) {
  using namespace plait_attention;
  extern __shared__ __align__(16) plait_half_bits shared[];
  plait_half_bits* keys = shared;                      // Q first, then each tile's K
  plait_half_bits* values = shared + kKeys * kStride;  // each tile's V

  const int batch = blockIdx.x / heads, head = blockIdx.x % heads;
  const int* tile = tiles + 8 * blockIdx.y;
  const int row_begin = tile[0], row_count = tile[1];
  q += batch * q_batch + head * q_head;
  k += batch * k_batch + head * k_head;
  v += batch * v_batch + head * v_head;
  out += batch * o_batch + head * o_head;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;  // the fragment's row group and column pair
  const int local[2] = {warp * 16 + g, warp * 16 + g + 8};
  int query[2];
  for (int h = 0; h < 2; ++h) query[h] = local[h] < row_count ? rows[row_begin + local[h]] : -1;

  // Q's fragments stay in registers for the whole row of tiles.
  load_rows(keys, kRows, [&](int r) { return r < row_count ? q + rows[row_begin + r] * q_row : nullptr; });
  __syncthreads();
  unsigned qa[kD / 16][4];
  for (int s = 0; s < kD / 16; ++s) {
    const plait_half_bits* r0 = keys + local[0] * kStride + s * 16 + 2 * t;
    const plait_half_bits* r1 = keys + local[1] * kStride + s * 16 + 2 * t;
    qa[s][0] = word(r0);
    qa[s][1] = word(r1);
    qa[s][2] = word(r0 + 8);
    qa[s][3] = word(r1 + 8);
  }

  float o[kD / 8][4];
  for (int n = 0; n < kD / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float best[2] = {minus_inf(), minus_inf()}, total[2] = {0.0f, 0.0f};

  for (int part = 0; part < 2; ++part) {
    const int lo = tile[2 + 3 * part], stride = tile[3 + 3 * part], columns = tile[4 + 3 * part];
    if (columns == 0) continue;
    // The kept columns of each of the thread's rows, as positions u on the progression.
    int first[2], last[2];
    for (int h = 0; h < 2; ++h) {
      first[h] = 1;
      last[h] = 0;
      if (query[h] >= 0) {
        const int count = parts[4 * query[h] + 2 * part + 1];
        if (count > 0) {
          first[h] = (parts[4 * query[h] + 2 * part] - lo) / stride;
          last[h] = first[h] + count - 1;
        }
      }
    }
    for (int u0 = 0; u0 < columns; u0 += kKeys) {
      __syncthreads();  // the last tile's K and V (or Q) are read
      const int present = min(kKeys, columns - u0);
      load_rows(keys, kKeys, [&](int r) { return r < present ? k + (lo + (long long)stride * (u0 + r)) * k_row : nullptr; });
      load_rows(values, kKeys,
                [&](int r) { return r < present ? v + (lo + (long long)stride * (u0 + r)) * v_row : nullptr; });
      __syncthreads();
      // A warp none of whose rows keeps a column of this tile skips it.
      const bool mine = (first[0] <= last[0] && first[0] < u0 + kKeys && last[0] >= u0) ||
                        (first[1] <= last[1] && first[1] < u0 + kKeys && last[1] >= u0);
      if (!__any_sync(0xffffffffu, mine)) continue;

      float s[kKeys / 8][4];
      for (int n = 0; n < kKeys / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
      for (int d = 0; d < kD / 16; ++d)
        for (int n = 0; n < kKeys / 8; ++n) {
          const plait_half_bits* key = keys + (n * 8 + g) * kStride + d * 16 + 2 * t;
          mma(s[n], qa[d], word(key), word(key + 8));
        }

      // Online softmax (base 2): the scores of kept columns, the row's new
      // maximum, the probabilities and the rescaling of what came before.
      float tile_best[2] = {minus_inf(), minus_inf()};
      for (int n = 0; n < kKeys / 8; ++n)
        for (int e = 0; e < 4; ++e) {
          const int h = e / 2, u = u0 + n * 8 + 2 * t + e % 2;
          s[n][e] = (u >= first[h] && u <= last[h]) ? s[n][e] * scale_log2 : minus_inf();
          tile_best[h] = fmaxf(tile_best[h], s[n][e]);
        }
      float rescale[2], sum[2] = {0.0f, 0.0f};
      for (int h = 0; h < 2; ++h) {
        tile_best[h] = fmaxf(tile_best[h], __shfl_xor_sync(0xffffffffu, tile_best[h], 1));
        tile_best[h] = fmaxf(tile_best[h], __shfl_xor_sync(0xffffffffu, tile_best[h], 2));
        const float next = fmaxf(best[h], tile_best[h]);
        // Until a row meets a kept column its maximum is -inf: its
        // probabilities are zero, and so is what they rescale.
        const float base = next == minus_inf() ? 0.0f : next;
        rescale[h] = exp2f(best[h] - base);
        best[h] = next;
        tile_best[h] = base;
      }
      for (int n = 0; n < kKeys / 8; ++n)
        for (int e = 0; e < 4; ++e) {
          const int h = e / 2;
          s[n][e] = exp2f(s[n][e] - tile_best[h]);
          sum[h] += s[n][e];
        }
      for (int h = 0; h < 2; ++h) {
        sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 1);
        sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 2);
        total[h] = total[h] * rescale[h] + sum[h];
      }
      for (int n = 0; n < kD / 8; ++n) {
        o[n][0] *= rescale[0];
        o[n][1] *= rescale[0];
        o[n][2] *= rescale[1];
        o[n][3] *= rescale[1];
      }

      // O += P V, 16 keys at a time.
      for (int j = 0; j < kKeys / 16; ++j) {
        const unsigned pa[4] = {pack(s[2 * j][0], s[2 * j][1]), pack(s[2 * j][2], s[2 * j][3]),
                                pack(s[2 * j + 1][0], s[2 * j + 1][1]), pack(s[2 * j + 1][2], s[2 * j + 1][3])};
        for (int n = 0; n < kD / 16; ++n) {
          // Lanes 0-7 address keys 0-7 of dims 16n..16n+7, 8-15 keys 8-15,
          // 16-23 keys 0-7 of dims 16n+8.., 24-31 keys 8-15 of those.
          const int matrix = lane / 8;
          const plait_half_bits* at =
              values + (j * 16 + (matrix % 2) * 8 + lane % 8) * kStride + n * 16 + (matrix / 2) * 8;
          unsigned b[4];
          load_transposed(b, at);
          mma(o[2 * n], pa, b[0], b[1]);
          mma(o[2 * n + 1], pa, b[2], b[3]);
        }
      }
    }
  }

  // A row without a kept column gives zeros.
  for (int h = 0; h < 2; ++h) {
    if (query[h] < 0) continue;
    const float inverse = total[h] > 0.0f ? 1.0f / total[h] : 0.0f;
    plait_half_bits* row = out + query[h] * o_row;
    for (int n = 0; n < kD / 8; ++n)
      *reinterpret_cast<unsigned*>(row + n * 8 + 2 * t) = pack(o[n][2 * h] * inverse, o[n][2 * h + 1] * inverse);
  }
}
