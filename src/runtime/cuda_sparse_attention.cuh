// Fused attention over an affine sparse pattern (ACSR) on tensor cores: one
// kernel computes softmax(scale * q k^T at the pattern's entries) v, flash
// style (scores live in registers, never in memory; the softmax is online).
// Compiled by NVRTC (no standard headers) after definitions the launcher
// (jit/cuda_sparse_attention.cpp) prints before this text:
//   PLAIT_ATTENTION_D     the head dimension: a multiple of 16, at most 128
//   PLAIT_ATTENTION_BF16  1: bfloat16 operands, 0: float16 (accumulation is float32)
//   PLAIT_TILE_*          the fields of a tile (runtime/attention_tiles.h)
//
// The launcher's plan (tensor/affine_tiles.h) groups query rows whose parts
// have the same stride and the same column residue, 64 rows to a tile: the
// kept columns of a tile's part then lie on one progression
// lo + stride * u, u < ncols, so keys are gathered into dense tiles of 64
// and the tensor cores multiply only columns some row of the tile keeps. A
// row keeps u in [(first - lo) / stride, that + count): the mask is two
// comparisons, no mask function and no per-entry index.
//
// Block: 4 warps, 16 query rows each; grid (batch * heads, tiles). The key
// tiles are copied to shared memory one ahead of the one being multiplied
// (two buffers, cp.async), the tiles of part 0 and then those of part 1. The MMA
// is mma.sync m16n8k16 (row.col, fp32 accumulate): the fragment of S = Q K^T
// that a thread holds is, two tiles of 8 columns at a time, the A operand of
// P V (the softmax's probabilities never leave the thread).

typedef unsigned short plait_half_bits;

namespace plait_attention {

constexpr int kD = PLAIT_ATTENTION_D;
constexpr int kRows = PLAIT_TILE_ROWS;  // query rows per block (16 per warp)
constexpr int kKeys = PLAIT_TILE_KEYS;  // keys per tile
constexpr int kThreads = 128;
constexpr int kStride = kD + 8;   // halves per shared row: 16 bytes of padding keep fragment loads free of conflicts
constexpr int kChunks = kD / 8;   // 16-byte chunks per row
// Blocks per multiprocessor the registers must allow: four up to D = 64
// (at most 128 registers a thread; 13% faster than three on an H200),
// whatever D = 128 needs (capped, its accumulators spill).
#define PLAIT_ATTENTION_MIN_BLOCKS (PLAIT_ATTENTION_D <= 64 ? 4 : 1)
constexpr int kPartial = kD + 2;  // a row's partial result in a slot: o (unnormalised), maximum, sum

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

// Four 8x8 matrices of halves from shared memory, each lane giving the
// address of one row (lanes 8m to 8m+7: matrix m's rows): B fragments of two
// 16x8 tiles, from rows of K (as they are) or of V (transposed).
__device__ __forceinline__ void load_matrices(unsigned (&r)[4], const plait_half_bits* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}
__device__ __forceinline__ void load_transposed(unsigned (&r)[4], const plait_half_bits* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

__device__ __forceinline__ unsigned word(const plait_half_bits* p) {
  return *reinterpret_cast<const unsigned*>(p);
}

// A float another block wrote (through L2: this block's L1 may not see it).
__device__ __forceinline__ float load_shared_by_blocks(const float* p) {
  float x;
  asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(x) : "l"(p));
  return x;
}

// Rows of a (batch, head) slice of q, k or v into shared memory, 16 bytes
// at a time without waiting (cp.async): `count` rows, row r from
// `source(r)`, zeros where that is null (nothing is read from `any`, a
// valid address the instruction wants).
template <typename Source>
__device__ __forceinline__ void load_rows(plait_half_bits* tile, int count, const plait_half_bits* any,
                                          Source source) {
  for (int at = threadIdx.x; at < count * kChunks; at += kThreads) {
    const int r = at / kChunks, chunk = at % kChunks;
    const plait_half_bits* from = source(r);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(shared_address(tile + r * kStride + chunk * 8)),
                 "l"(from ? from + chunk * 8 : any), "r"(from ? 16 : 0)
                 : "memory");
  }
  asm volatile("cp.async.commit_group;" ::: "memory");
}

// Waits for all but the last `pending` groups of copies of this thread.
template <int pending>
__device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;" ::"n"(pending) : "memory");
}

}  // namespace plait_attention

// q, k, v, out: (batch, heads, rows, kD) with the last dimension contiguous;
// strides in elements, each a multiple of 8, the arrays 16-byte aligned.
// rows: the query rows in tile order. tiles: per tile its first position in
// `rows`, its row count, and per part (2) the first column, stride and
// column count of its progression. parts: per query row, per part, its first
// column and count. partials, counters: where the splits of a long tile
// (kSplitGroup >= 0) leave their results and count themselves (zeros before
// the launch), per (batch, head): `slots` slots of kRows x kPartial floats,
// `groups` counters.
extern "C" __global__ void __launch_bounds__(128, PLAIT_ATTENTION_MIN_BLOCKS)
    plait_sparse_attention(const plait_half_bits* __restrict__ q, long long q_batch, long long q_head, long long q_row,
                           const plait_half_bits* __restrict__ k, long long k_batch, long long k_head, long long k_row,
                           const plait_half_bits* __restrict__ v, long long v_batch, long long v_head, long long v_row,
                           plait_half_bits* __restrict__ out, long long o_batch, long long o_head, long long o_row,
                           int heads, float scale_log2, const int* __restrict__ rows, const int* __restrict__ tiles,
                           const int* __restrict__ parts, float* __restrict__ partials, int* __restrict__ counters,
                           int slots, int groups) {
  using namespace plait_attention;
  extern __shared__ __align__(16) plait_half_bits shared[];
  // Q's tile, then two buffers of a K tile and a V tile.
  plait_half_bits* const queries = shared;
  auto keys_of = [&](int step) { return shared + (1 + 2 * (step % 2)) * kKeys * kStride; };

  const int batch = blockIdx.x / heads, head = blockIdx.x % heads;
  const int* tile = tiles + PLAIT_TILE_FIELDS * blockIdx.y;
  const int row_begin = tile[PLAIT_TILE_ROW_BEGIN], row_count = tile[PLAIT_TILE_ROW_COUNT];
  q += batch * q_batch + head * q_head;
  k += batch * k_batch + head * k_head;
  v += batch * v_batch + head * v_head;
  out += batch * o_batch + head * o_head;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;  // the fragment's row group and column pair
  const int local[2] = {warp * 16 + g, warp * 16 + g + 8};
  int query[2];
  for (int h = 0; h < 2; ++h) query[h] = local[h] < row_count ? rows[row_begin + local[h]] : -1;

  // The kept columns of each of the thread's rows, per part, as positions u
  // on the tile's progression (first > last: none).
  int first[2][2], last[2][2];
  for (int part = 0; part < 2; ++part)
    for (int h = 0; h < 2; ++h) {
      first[part][h] = 1;
      last[part][h] = 0;
      const int count = query[h] >= 0 ? parts[4 * query[h] + 2 * part + 1] : 0;
      if (count > 0) {
        first[part][h] = (parts[4 * query[h] + 2 * part] - tile[PLAIT_TILE_PART_LO + 3 * part]) /
                         tile[PLAIT_TILE_PART_STRIDE + 3 * part];
        last[part][h] = first[part][h] + count - 1;
      }
    }
  // Steps: the key tiles of part 0, then those of part 1; this block runs
  // those from begin to end (all but for a split of a long tile).
  const int steps0 = (tile[PLAIT_TILE_PART_COLUMNS] + kKeys - 1) / kKeys;
  const int begin = tile[PLAIT_TILE_STEP_BEGIN], end = tile[PLAIT_TILE_STEP_END];
  // Copies the K and V tile of `step` into its buffer.
  auto fetch = [&](int step) {
    const int part = step < steps0 ? 0 : 1;
    const int u0 = (step - part * steps0) * kKeys;
    const int lo = tile[PLAIT_TILE_PART_LO + 3 * part], stride = tile[PLAIT_TILE_PART_STRIDE + 3 * part];
    const int present = min(kKeys, tile[PLAIT_TILE_PART_COLUMNS + 3 * part] - u0);
    plait_half_bits* keys = keys_of(step);
    load_rows(keys, kKeys, k, [&](int r) {
      return r < present ? k + (lo + (long long)stride * (u0 + r)) * k_row : nullptr;
    });
    load_rows(keys + kKeys * kStride, kKeys, v, [&](int r) {
      return r < present ? v + (lo + (long long)stride * (u0 + r)) * v_row : nullptr;
    });
  };

  load_rows(queries, kRows, q, [&](int r) { return r < row_count ? q + rows[row_begin + r] * q_row : nullptr; });
  if (begin < end) {
    fetch(begin);
    wait_copies<2>();  // Q's copies (a group per thread), not the first tile's two
  } else {
    wait_copies<0>();
  }
  __syncthreads();
  // Q's fragments stay in registers for the whole row of tiles.
  unsigned qa[kD / 16][4];
  for (int s = 0; s < kD / 16; ++s) {
    const plait_half_bits* r0 = queries + local[0] * kStride + s * 16 + 2 * t;
    const plait_half_bits* r1 = queries + local[1] * kStride + s * 16 + 2 * t;
    qa[s][0] = word(r0);
    qa[s][1] = word(r1);
    qa[s][2] = word(r0 + 8);
    qa[s][3] = word(r1 + 8);
  }

  float o[kD / 8][4];
  for (int n = 0; n < kD / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float best[2] = {minus_inf(), minus_inf()}, total[2] = {0.0f, 0.0f};

  for (int step = begin; step < end; ++step) {
    if (step + 1 < end) {
      fetch(step + 1);
      wait_copies<2>();  // this step's tile, not the next one's
    } else {
      wait_copies<0>();
    }
    __syncthreads();
    const int part = step < steps0 ? 0 : 1;
    const int u0 = (step - part * steps0) * kKeys;
    const int lo_u[2] = {part ? first[1][0] : first[0][0], part ? first[1][1] : first[0][1]};
    const int hi_u[2] = {part ? last[1][0] : last[0][0], part ? last[1][1] : last[0][1]};
    // A warp none of whose rows keeps a column of this tile skips it.
    const bool mine = (lo_u[0] <= hi_u[0] && lo_u[0] < u0 + kKeys && hi_u[0] >= u0) ||
                      (lo_u[1] <= hi_u[1] && lo_u[1] < u0 + kKeys && hi_u[1] >= u0);
    if (__any_sync(0xffffffffu, mine)) {
      const plait_half_bits* keys = keys_of(step);
      const plait_half_bits* values = keys + kKeys * kStride;
      const int matrix = lane / 8;  // the 8x8 matrix whose row this lane addresses
      float s[kKeys / 8][4];
      for (int n = 0; n < kKeys / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
      for (int d = 0; d < kD / 16; ++d)
        for (int n = 0; n < kKeys / 8; n += 2) {
          // Matrices: keys 8n.. at dims 16d.. and 16d+8.., then keys 8(n+1).. at the same.
          unsigned b[4];
          load_matrices(b, keys + ((n + matrix / 2) * 8 + lane % 8) * kStride + d * 16 + (matrix % 2) * 8);
          mma(s[n], qa[d], b[0], b[1]);
          mma(s[n + 1], qa[d], b[2], b[3]);
        }

      // Online softmax (base 2): the scores of kept columns, the row's new
      // maximum, the probabilities and the rescaling of what came before.
      float tile_best[2] = {minus_inf(), minus_inf()};
      for (int n = 0; n < kKeys / 8; ++n)
        for (int e = 0; e < 4; ++e) {
          const int h = e / 2, u = u0 + n * 8 + 2 * t + e % 2;
          s[n][e] = (u >= lo_u[h] && u <= hi_u[h]) ? s[n][e] * scale_log2 : minus_inf();
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
          // Matrices: keys 16j.. and 16j+8.. at dims 16n.., then the same keys at dims 16n+8...
          unsigned b[4];
          load_transposed(b, values + (j * 16 + (matrix % 2) * 8 + lane % 8) * kStride + n * 16 + (matrix / 2) * 8);
          mma(o[2 * n], pa, b[0], b[1]);
          mma(o[2 * n + 1], pa, b[2], b[3]);
        }
      }
    }
    __syncthreads();  // this buffer is copied into again two steps on
  }

  const int group = tile[PLAIT_TILE_SPLIT_GROUP];
  if (group < 0) {
    // A row without a kept column gives zeros.
    for (int h = 0; h < 2; ++h) {
      if (query[h] < 0) continue;
      const float inverse = total[h] > 0.0f ? 1.0f / total[h] : 0.0f;
      plait_half_bits* row = out + query[h] * o_row;
      for (int n = 0; n < kD / 8; ++n)
        *reinterpret_cast<unsigned*>(row + n * 8 + 2 * t) = pack(o[n][2 * h] * inverse, o[n][2 * h + 1] * inverse);
    }
    return;
  }

  // A split of a long tile: its partial softmax to its slot; the last split
  // to finish merges the slots into the output.
  const int splits = tile[PLAIT_TILE_SPLITS];
  float* const first_slot = partials + ((long long)blockIdx.x * slots + tile[PLAIT_TILE_SLOT]) * kRows * kPartial;
  float* const slot = first_slot + (long long)tile[PLAIT_TILE_SPLIT] * kRows * kPartial;
  for (int h = 0; h < 2; ++h) {
    float* row = slot + local[h] * kPartial;
    for (int n = 0; n < kD / 8; ++n) {
      row[n * 8 + 2 * t] = o[n][2 * h];
      row[n * 8 + 2 * t + 1] = o[n][2 * h + 1];
    }
    if (t == 0) {
      row[kD] = best[h];
      row[kD + 1] = total[h];
    }
  }
  __threadfence();
  __syncthreads();
  __shared__ int merges;
  if (threadIdx.x == 0) merges = atomicAdd(counters + (long long)blockIdx.x * groups + group, 1) == splits - 1;
  __syncthreads();
  if (!merges) return;
  __threadfence();
  for (int at = threadIdx.x; at < row_count * kD; at += kThreads) {
    const int r = at / kD, dim = at % kD;
    float top = minus_inf();
    for (int k = 0; k < splits; ++k)
      top = fmaxf(top, load_shared_by_blocks(first_slot + (k * kRows + r) * kPartial + kD));
    const float base = top == minus_inf() ? 0.0f : top;
    float sum = 0.0f, value = 0.0f;
    for (int k = 0; k < splits; ++k) {
      const float* row = first_slot + (k * kRows + r) * kPartial;
      const float weight = exp2f(load_shared_by_blocks(row + kD) - base);
      sum += weight * load_shared_by_blocks(row + kD + 1);
      value += weight * load_shared_by_blocks(row + dim);
    }
    out[rows[row_begin + r] * o_row + dim] = (plait_half_bits)(pack(sum > 0.0f ? value / sum : 0.0f, 0.0f) & 0xffffu);
  }
}
