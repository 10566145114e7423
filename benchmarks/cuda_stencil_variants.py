"""Hand-written CUDA forms of one sweep of the 2-D 5-point stencil
(float64, N x N, the interior written), timed side by side with
torch.compile in one process: how a collapsed 2-D nest should map its
iterations to threads, before the CUDA back end's code generator emits it
(docs/cuda.md, "Rows of tiles").

    python benchmarks/cuda_stencil_variants.py [N] [ROW_BLOCKS]

Forms: `flat64` (the collapsed index of 2 iterations per thread divided by
the row length per thread, as Plait emitted before), `rows64_U` and
`rows32_U` (a block takes a tile of 256*U consecutive columns of one row,
blockIdx.y the rows, 64- or 32-bit indices), `rowsptr_U` (a 64-bit row
base, 32-bit columns). ROW_BLOCKS (default N - 2) caps blockIdx.y, so that
blocks loop over rows. Timing: 50 steps of two sweeps, CUDA events, L2
flushed before each run, median of 10 after 2; each form is checked against
CuPy's array code.
"""

import statistics
import sys

import cupy as cp
import numpy as np
import torch

SRC = r'''
typedef long long I64; typedef unsigned long long U64; typedef int I32; typedef unsigned int U32;
__device__ __forceinline__ I64 split_digit(I64& rest, I64 trip) {
  if ((((U64)rest | (U64)trip) >> 32) == 0) {
    const U32 r = (U32)rest, t = (U32)trip, q = r / t;
    rest = q; return (I64)(r - q * t);
  }
  const I64 q = rest / trip, digit = rest - q * trip; rest = q; return digit;
}
#define BODY(dst, src, i, j, s) dst[(i) * s + (j)] = 0.2 * (src[(i) * s + (j)] + src[(i) * s + (j) - 1] + src[(i) * s + (j) + 1] + src[((i) + 1) * s + (j)] + src[((i) - 1) * s + (j)])
// The flat form (as Plait emitted before the rows version): the collapsed
// index divided per thread, 2 iterations 256 apart.
extern "C" __global__ void __launch_bounds__(256) flat64(I64 H, I64 W, double* dst, const double* src, I64 s) {
  const I64 total = H * W, stride = (I64)gridDim.x * blockDim.x * 2;
  I64 rest0 = 256; I64 by1 = split_digit(rest0, W), by0 = rest0;
  for (I64 k = (I64)blockIdx.x * blockDim.x * 2 + threadIdx.x; k < total; k += stride) {
    const bool in1 = k + 256 < total;
    I64 r = k; const I64 j0 = split_digit(r, W); const I64 i0 = r;
    I64 j1 = j0 + by1; bool c = j1 >= W; if (c) j1 -= W; const I64 i1 = i0 + by0 + c;
    double v0 = 0.2 * (src[(i0+1) * s + j0+1] + src[(i0+1) * s + j0] + src[(i0+1) * s + j0 + 2] + src[(i0 + 2) * s + j0+1] + src[(i0) * s + j0+1]);
    double v1 = 0; if (in1) v1 = 0.2 * (src[(i1+1) * s + j1+1] + src[(i1+1) * s + j1] + src[(i1+1) * s + j1 + 2] + src[(i1 + 2) * s + j1+1] + src[(i1) * s + j1+1]);
    dst[(i0+1)*s + j0+1] = v0; if (in1) dst[(i1+1)*s + j1+1] = v1;
  }
}
// Tiles of one row: blockIdx.x a tile of 256*U columns, blockIdx.y rows.
template <typename I, int U>
__device__ void rows(I H, I W, double* dst, const double* src, I s) {
  const I j0 = (I)blockIdx.x * (256 * U) + threadIdx.x;
  for (I i = blockIdx.y; i < H; i += gridDim.y) {
    double v[U];
    #pragma unroll
    for (int u = 0; u < U; ++u) { const I j = j0 + u * 256; if (j < W) { const I ii = i + 1, jj = j + 1; v[u] = 0.2 * (src[ii * s + jj] + src[ii * s + jj - 1] + src[ii * s + jj + 1] + src[(ii + 1) * s + jj] + src[(ii - 1) * s + jj]); } }
    #pragma unroll
    for (int u = 0; u < U; ++u) { const I j = j0 + u * 256; if (j < W) dst[(i + 1) * s + j + 1] = v[u]; }
  }
}
extern "C" __global__ void __launch_bounds__(256) rows64_1(I64 H, I64 W, double* d, const double* sr, I64 s) { rows<I64, 1>(H, W, d, sr, s); }
extern "C" __global__ void __launch_bounds__(256) rows64_2(I64 H, I64 W, double* d, const double* sr, I64 s) { rows<I64, 2>(H, W, d, sr, s); }
extern "C" __global__ void __launch_bounds__(256) rows64_4(I64 H, I64 W, double* d, const double* sr, I64 s) { rows<I64, 4>(H, W, d, sr, s); }
extern "C" __global__ void __launch_bounds__(256) rows32_2(I64 H, I64 W, double* d, const double* sr, I64 s) { rows<I32, 2>((I32)H, (I32)W, d, sr, (I32)s); }
extern "C" __global__ void __launch_bounds__(256) rows32_1(I64 H, I64 W, double* d, const double* sr, I64 s) { rows<I32, 1>((I32)H, (I32)W, d, sr, (I32)s); }
// Row pointer form: 64-bit row base computed once per row, 32-bit column offsets.
template <int U>
__device__ void rowsptr(I64 H, I64 W, double* dst, const double* src, I64 s) {
  const int j0 = blockIdx.x * (256 * U) + threadIdx.x;
  const int w = (int)W;
  for (I64 i = blockIdx.y; i < H; i += gridDim.y) {
    const double* r = src + (i + 1) * s + 1; double* o = dst + (i + 1) * s + 1;
    double v[U];
    #pragma unroll
    for (int u = 0; u < U; ++u) { const int j = j0 + u * 256; if (j < w) v[u] = 0.2 * (r[j] + r[j - 1] + r[j + 1] + r[j + s] + r[j - s]); }
    #pragma unroll
    for (int u = 0; u < U; ++u) { const int j = j0 + u * 256; if (j < w) o[j] = v[u]; }
  }
}
extern "C" __global__ void __launch_bounds__(256) rowsptr_2(I64 H, I64 W, double* d, const double* sr, I64 s) { rowsptr<2>(H, W, d, sr, s); }
extern "C" __global__ void __launch_bounds__(256) rowsptr_1(I64 H, I64 W, double* d, const double* sr, I64 s) { rowsptr<1>(H, W, d, sr, s); }
'''

FORMS = ["flat64", "rows64_1", "rows64_2", "rows64_4", "rows32_1", "rows32_2", "rowsptr_1", "rowsptr_2"]
STEPS = 50


def array_steps(A, B):
    for _ in range(STEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


def median_ms(run, fresh, flush, check=None):
    times, ok = [], True
    for r in range(12):
        arrays = fresh()
        flush.fill(1)
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        run(*arrays)
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
        if r == 0 and check is not None:
            ok = check(*arrays)
    return statistics.median(times[2:]), ok


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    row_blocks = int(sys.argv[2]) if len(sys.argv) > 2 else n - 2
    module = cp.RawModule(code=SRC, options=("-std=c++17",))
    A0, B0 = cp.random.rand(n, n), cp.random.rand(n, n)
    Ar, Br = A0.copy(), B0.copy()
    array_steps(Ar, Br)
    interior = n - 2
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    flush = cp.empty(64 << 20, dtype=cp.int32)
    copy_bytes = 2 * STEPS * 2 * n * n * 8  # each sweep reads and writes one array

    def check(A, B):
        return bool(cp.allclose(A, Ar) and cp.allclose(B, Br))

    for name in FORMS:
        kernel = module.get_function(name)
        if name == "flat64":
            grid = (min((interior * interior + 511) // 512, sms * 32),)
        else:
            tile = 256 * int(name[-1])
            grid = ((interior + tile - 1) // tile, min(interior, row_blocks))
        args = (np.int64(interior), np.int64(interior))

        def run(A, B, kernel=kernel, grid=grid):
            for _ in range(STEPS):
                kernel(grid, (256,), (*args, B, A, np.int64(n)))
                kernel(grid, (256,), (*args, A, B, np.int64(n)))

        ms, ok = median_ms(run, lambda: (A0.copy(), B0.copy()), flush, check)
        print(f"{name:13s} {ms:8.3f} ms  {copy_bytes / ms / 1e9:.2f} TB/s  matches CuPy: {ok}", flush=True)

    @torch.compile
    def sweep(A, B):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])

    def compiled(A, B):
        for _ in range(STEPS):
            sweep(A, B)
            sweep(B, A)

    def fresh_tensors():
        return torch.as_tensor(A0, device="cuda").clone(), torch.as_tensor(B0, device="cuda").clone()

    compiled(*fresh_tensors())
    torch.cuda.synchronize()
    ms, _ = median_ms(compiled, fresh_tensors, flush)
    print(f"{'torch.compile':13s} {ms:8.3f} ms  {copy_bytes / ms / 1e9:.2f} TB/s")


if __name__ == "__main__":
    main()
