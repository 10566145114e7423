"""Hand-written CUDA forms of CSR spmv (float64, int32 row pointers and
columns, random columns), timed side by side with the Triton kernel of
gpu_kernels.py in one process: which mapping of rows to threads the CUDA
back end should emit for a simd reduction over a CSR row.

    python benchmarks/cuda_spmv_variants.py [ROWS] [NNZ]

Forms: `team2_u4` (what Plait emits: a team of 2 threads per row, 64-bit
indices, `#pragma unroll 4`), `team2_u4_32` (the same with 32-bit
indices), `team2_ldg` (loads through the read-only cache), `stream_R`
(a block of 256 threads takes R consecutive rows; since their ranges
rowptr[i]..rowptr[i + 1] are consecutive, the block's threads first compute
vals[k] * x[cols[k]] for the whole range rowptr[i0]..rowptr[i0 + R] with
consecutive threads on consecutive k, into shared memory, then each row
sums its segment there; a block whose range does not fit runs the team
form), and Plait's two versions of gpu_kernels.plait_spmv (`plait`, the
team kernel, and `plait_staged`, docs/cuda.md "CSR rows staged per block"),
each launched directly. Timing: CUDA events, L2 flushed before each run,
median of 20 after 3; each form is checked against a CuPy reference.
"""

import statistics
import sys

import cupy as cp
import numpy as np

SRC = r'''
typedef long long I64; typedef int I32;
// Plait's form: a team of 2 threads per row.
template <typename I, bool LDG>
__device__ void team2(I rows, const I32* rowptr, const I32* cols, const double* vals, const double* x, double* y) {
  const int lane = threadIdx.x & 1;
  const I stride = ((I)gridDim.x * blockDim.x) >> 1;
  for (I i = ((I)blockIdx.x * blockDim.x + threadIdx.x) >> 1; i < rows; i += stride) {
    const I b = LDG ? __ldg(rowptr + i) : rowptr[i], e = LDG ? __ldg(rowptr + i + 1) : rowptr[i + 1];
    double acc = 0;
    #pragma unroll 4
    for (I k = b + lane; k < e; k += 2) acc += (LDG ? __ldg(vals + k) : vals[k]) * (LDG ? __ldg(x + (LDG ? __ldg(cols + k) : cols[k])) : x[cols[k]]);
    acc += __shfl_xor_sync(0xffffffffu, acc, 1);
    if (lane == 0) y[i] = acc;
  }
}
extern "C" __global__ void __launch_bounds__(256) team2_u4(I64 rows, const I32* rp, const I32* c, const double* v, const double* x, double* y) { team2<I64, false>(rows, rp, c, v, x, y); }
extern "C" __global__ void __launch_bounds__(256) team2_u4_32(I64 rows, const I32* rp, const I32* c, const double* v, const double* x, double* y) { team2<I32, false>((I32)rows, rp, c, v, x, y); }
extern "C" __global__ void __launch_bounds__(256) team2_ldg(I64 rows, const I32* rp, const I32* c, const double* v, const double* x, double* y) { team2<I64, true>(rows, rp, c, v, x, y); }
// Stream form: R rows per block of 256 threads, products staged in shared memory.
template <int R, int CAP, int U = 1>
__device__ void stream(I64 rows, const I32* rowptr, const I32* cols, const double* vals, const double* x, double* y) {
  __shared__ double prod[CAP];
  __shared__ I32 bounds[R + 1];
  const I64 i0 = (I64)blockIdx.x * R;
  const int nr = (int)(rows - i0 < R ? rows - i0 : R);
  for (int t = threadIdx.x; t <= nr; t += blockDim.x) bounds[t] = rowptr[i0 + t];
  __syncthreads();
  const I32 lo = bounds[0], hi = bounds[nr];
  bool fits = hi - lo <= CAP && lo <= hi;
  if (fits) {
    #pragma unroll U
    for (I32 k = lo + threadIdx.x; k < hi; k += 256) prod[k - lo] = vals[k] * x[cols[k]];
    __syncthreads();
    constexpr int T = 256 / R;  // threads per row
    const int r = threadIdx.x / T, lane = threadIdx.x % T;
    double acc = 0;
    if (r < nr) {
      const I32 b = bounds[r], e = bounds[r + 1];
      if (b >= lo && e <= hi) { for (I32 k = b + lane; k < e; k += T) acc += prod[k - lo]; }
      else { for (I32 k = b + lane; k < e; k += T) acc += vals[k] * x[cols[k]]; }
    }
    #pragma unroll
    for (int o = T / 2; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (r < nr && lane == 0) y[i0 + r] = acc;
  } else {
    const int r = threadIdx.x >> 1, lane = threadIdx.x & 1;
    for (int rr = r; rr < nr; rr += 128) {
      const I32 b = bounds[rr], e = bounds[rr + 1];
      double acc = 0;
      for (I32 k = b + lane; k < e; k += 2) acc += vals[k] * x[cols[k]];
      acc += __shfl_xor_sync(0xffffffffu, acc, 1);
      if (lane == 0) y[i0 + rr] = acc;
    }
  }
}
extern "C" __global__ void __launch_bounds__(256) stream_128(I64 rows, const I32* rp, const I32* c, const double* v, const double* x, double* y) { stream<128, 2048>(rows, rp, c, v, x, y); }
extern "C" __global__ void __launch_bounds__(256) stream_256(I64 rows, const I32* rp, const I32* c, const double* v, const double* x, double* y) { stream<256, 4096>(rows, rp, c, v, x, y); }
extern "C" __global__ void __launch_bounds__(256) stream_64(I64 rows, const I32* rp, const I32* c, const double* v, const double* x, double* y) { stream<64, 1024>(rows, rp, c, v, x, y); }
extern "C" __global__ void __launch_bounds__(256) stream_32(I64 rows, const I32* rp, const I32* c, const double* v, const double* x, double* y) { stream<32, 512>(rows, rp, c, v, x, y); }
extern "C" __global__ void __launch_bounds__(256) stream_64u4(I64 rows, const I32* rp, const I32* c, const double* v, const double* x, double* y) { stream<64, 1024, 4>(rows, rp, c, v, x, y); }
extern "C" __global__ void __launch_bounds__(256) stream_128u4(I64 rows, const I32* rp, const I32* c, const double* v, const double* x, double* y) { stream<128, 2048, 4>(rows, rp, c, v, x, y); }
extern "C" __global__ void __launch_bounds__(256) stream_128u8(I64 rows, const I32* rp, const I32* c, const double* v, const double* x, double* y) { stream<128, 2048, 8>(rows, rp, c, v, x, y); }
'''

FORMS = ["team2_u4", "team2_u4_32", "team2_ldg", "stream_32", "stream_64", "stream_128", "stream_256", "stream_64u4",
         "stream_128u4", "stream_128u8"]


def median_ms(run, flush):
    times = []
    for _ in range(23):
        flush.fill(1)
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return statistics.median(times[3:])


def main():
    m = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    nnz = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000_000
    rng = np.random.default_rng(1)
    keys = np.sort(rng.integers(0, m, nnz, dtype=np.int64) * m + rng.integers(0, m, nnz, dtype=np.int64))
    rows_h = (keys // m).astype(np.int32)
    rowptr_h = np.zeros(m + 1, np.int32)
    np.cumsum(np.bincount(rows_h, minlength=m), out=rowptr_h[1:])
    rowptr, cols = cp.asarray(rowptr_h), cp.asarray((keys % m).astype(np.int32))
    vals, x = cp.asarray(rng.random(nnz)), cp.asarray(rng.random(m))
    ref = cp.bincount(cp.asarray(rows_h), weights=vals * x[cols], minlength=m)
    y = cp.empty(m)
    flush = cp.empty(64 << 20, dtype=cp.int32)
    module = cp.RawModule(code=SRC, options=("-std=c++17",))
    moved = nnz * 20 + m * 12  # vals, cols, one x per non-zero at 8 bytes, rowptr, y
    for name in FORMS:
        kernel = module.get_function(name)
        rows_per_block = 128 if name.startswith("team") else int(name.split("_")[1].split("u")[0])
        grid = ((m + rows_per_block - 1) // rows_per_block,)
        args = (np.int64(m), rowptr, cols, vals, x, y)
        y.fill(np.nan)
        kernel(grid, (256,), args)
        ok = bool(cp.allclose(y, ref))
        ms = median_ms(lambda kernel=kernel, grid=grid, args=args: kernel(grid, (256,), args), flush)
        print(f"{name:12s} {ms:8.4f} ms  {moved / ms / 1e9:.2f} TB/s  matches: {ok}", flush=True)
    # Plait's two versions of gpu_kernels.plait_spmv (docs/cuda.md, "CSR
    # rows staged per block"), each launched directly whatever the host
    # would choose: the team kernel and the staged one.
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    import plait
    from gpu_kernels import plait_spmv

    compiled = plait.jit(plait_spmv, target="cuda")
    compiled(rowptr, cols, vals, x, y)
    device_part = compiled.inspect_source().split("// ======== host part")[0]
    generated = cp.RawModule(code=device_part, options=("-std=c++17",))
    error = cp.zeros(8, dtype=cp.int64)  # plait::device_error
    for version in ("", "_staged"):
        kernel = generated.get_function("plait_plait_spmv_k0" + version)
        grid = ((2 * m + 255) // 256,)  # teams of 2 threads per row
        args = (np.int64(0), np.int64(1), np.int64(m), np.int32(2), rowptr, np.int64(m + 1), vals, np.int64(nnz), x,
                np.int64(m), cols, np.int64(nnz), y, np.int64(m), error)
        y.fill(np.nan)
        kernel(grid, (256,), args)
        ok = bool(cp.allclose(y, ref))
        ms = median_ms(lambda kernel=kernel, grid=grid, args=args: kernel(grid, (256,), args), flush)
        print(f"{'plait' + version:12s} {ms:8.4f} ms  {moved / ms / 1e9:.2f} TB/s  matches: {ok}", flush=True)
    try:
        import torch

        from gpu_kernels import tr_spmv

        t = {k: torch.as_tensor(v, device="cuda") for k, v in
             {"rowptr": rowptr, "cols": cols, "vals": vals, "x": x, "y": y}.items()}

        def triton():
            tr_spmv[((m + 63) // 64,)](t["rowptr"], t["cols"], t["vals"], t["x"], t["y"], m, ROWS=64, K=16)

        triton()
        torch.cuda.synchronize()
        print(f"{'triton':12s} {median_ms(triton, flush):8.4f} ms  matches: {bool(cp.allclose(y, ref))}")
    except ImportError as error:
        print(f"triton: skipped ({error})")


if __name__ == "__main__":
    main()
