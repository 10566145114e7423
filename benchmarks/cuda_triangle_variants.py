"""Hand-written CUDA variants of covariance's triangular product, timed side
by side with CuPy RawKernels: how a team of threads per row i should share
cov[i, i + j] = sum_k d[k, i] * d[k, i + j] / (N - 1) (j < M - i, the row
mirrored into column i), before the CUDA back end is changed.

    python benchmarks/cuda_triangle_variants.py [--sizes 500x600,1200x1400] [--out DIR]

A variant `tT_sS_jJ` has teams of T threads per row (256 / T rows per block
of 256), each team's lanes over the columns j; S > 1 splits the k loop over
S lanes of one warp (k = s, s + S, ...), whose partial sums combine by warp
shuffles; J > 1 runs J of a thread's columns in lockstep through the k loop
(J accumulators, d[k, i] loaded once). `t256_s1_j1` is what Plait emits at
M >= 513 (`t128_s1_j1` below). `rowsR` is a reference no team rule can
reach: R consecutive rows per team of 256, each column load shared by the R
rows (register blocking). Timing: CUDA events, median of 20, --fmad=false as
Plait compiles. With --plait, also Plait's whole covariance kernel (column
means, centring and the triangle, plus a copy of the input).
"""

import argparse
import os
import statistics
import sys

import numpy as np

try:
    import cupy as cp
except Exception as exc:  # noqa: BLE001
    print(f"CuPy unavailable: {exc}")
    sys.exit(0)

SOURCE = r"""
template <int T, int S, int J>
__global__ void __launch_bounds__(256) team(const double* d, double* cov, long long M, long long N) {
  const long long total = M;
  const int lane = threadIdx.x & (T - 1);
  const int w = lane / 32, l = lane & 31;
  constexpr int G = 32 / S;        // column lanes per warp
  constexpr int TJ = T / S;        // column lanes per team
  const int s = l / G, c = l % G;
  const int jl = w * G + c;
  for (long long i = ((long long)blockIdx.x * 256 + threadIdx.x) / T; i < total;
       i += (long long)gridDim.x * 256 / T) {
    const long long trip = M - i;
    for (long long p = 0; (long long)w * G + p * TJ * J < trip; ++p) {
      double acc[J];
      long long jj[J];
#pragma unroll
      for (int u = 0; u < J; ++u) {
        acc[u] = 0.0;
        jj[u] = jl + (p * J + u) * TJ;
      }
#pragma unroll 4
      for (long long k = s; k < N; k += S) {
        const double a = d[k * M + i];
#pragma unroll
        for (int u = 0; u < J; ++u)
          if (jj[u] < trip) acc[u] = acc[u] + a * d[k * M + i + jj[u]];
      }
#pragma unroll
      for (int u = 0; u < J; ++u) {
#pragma unroll
        for (int off = G; off < 32; off *= 2) acc[u] = acc[u] + __shfl_xor_sync(0xffffffffu, acc[u], off);
        if (s == 0 && jj[u] < trip) {
          const double v = acc[u] / (double)(N - 1);
          cov[i * M + i + jj[u]] = v;
          cov[(i + jj[u]) * M + i] = v;
        }
      }
    }
  }
}

template <int R>
__global__ void __launch_bounds__(256) rows(const double* d, double* cov, long long M, long long N) {
  const long long groups = (M + R - 1) / R;
  for (long long g = blockIdx.x; g < groups; g += gridDim.x) {
    const long long i0 = g * R;
    for (long long j = i0 + threadIdx.x; j < M; j += 256) {
      double acc[R];
#pragma unroll
      for (int r = 0; r < R; ++r) acc[r] = 0.0;
#pragma unroll 4
      for (long long k = 0; k < N; ++k) {
        const double b = d[k * M + j];
#pragma unroll
        for (int r = 0; r < R; ++r)
          if (i0 + r < M) acc[r] = acc[r] + d[k * M + i0 + r] * b;
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const long long i = i0 + r;
        if (i < M && j >= i) {
          const double v = acc[r] / (double)(N - 1);
          cov[i * M + j] = v;
          cov[j * M + i] = v;
        }
      }
    }
  }
}
"""

TEAMS = [(256, 1, 1), (128, 1, 1), (64, 1, 1), (32, 1, 1),
         (256, 1, 2), (256, 1, 4), (128, 1, 4), (64, 1, 4), (32, 1, 4),
         (256, 2, 1), (256, 4, 1), (256, 8, 1), (128, 4, 1), (64, 4, 1), (32, 4, 1), (32, 8, 1),
         (256, 2, 2), (256, 4, 2), (256, 4, 4), (128, 4, 2), (64, 4, 4), (32, 4, 4), (64, 8, 2)]
ROWS = [2, 4, 8]


def median_ms(fn, repeat=20):
    start, end = cp.cuda.Event(), cp.cuda.Event()
    fn()
    times = []
    for _ in range(repeat):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return statistics.median(times)


def plait_ms(M, N, host):
    """Plait's covariance on CuPy arrays (it centres `data` in place: a fresh copy per run)."""
    import plait

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from npbench import covariance

    kernel = plait.jit(target="cuda")(covariance.kernel_plait.py_func)
    d = cp.asarray(host)
    fresh = cp.empty_like(d)
    return median_ms(lambda: (fresh.__setitem__(Ellipsis, d), kernel(M, np.float64(N), fresh)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="500x600,1200x1400,1400x1800")
    parser.add_argument("--out")
    parser.add_argument("--plait", action="store_true", help="also time benchmarks/npbench/covariance.py's kernel_plait")
    args = parser.parse_args()
    names = [f"team<{t},{s},{j}>" for t, s, j in TEAMS] + [f"rows<{r}>" for r in ROWS]
    module = cp.RawModule(code=SOURCE, options=("--fmad=false", "-std=c++17"), name_expressions=names)
    lines = []
    for size in args.sizes.split(","):
        M, N = (int(x) for x in size.split("x"))
        rng = np.random.default_rng(1)
        host = rng.random((N, M))
        host -= host.mean(axis=0)
        d = cp.asarray(host)
        want = host.T @ host / (N - 1)
        lines.append(f"M={M} N={N}")
        for name in names:
            kernel = module.get_function(name)
            cov = cp.zeros((M, M))
            if name.startswith("team"):
                t = int(name[5:].split(",")[0])
                grid = min(65536, (M * t + 255) // 256)
            else:
                r = int(name[5:-1])
                grid = min(65536, (M + r - 1) // r)
            launch = lambda: kernel((grid,), (256,), (d, cov, np.int64(M), np.int64(N)))  # noqa: E731
            launch()
            err = float(np.max(np.abs(cp.asnumpy(cov) - want)))
            ms = median_ms(launch)
            lines.append(f"  {name:16s} {ms:8.4f} ms  max err {err:.2e}")
            print(lines[-1], flush=True)
        if args.plait:
            lines.append(f"  plait (whole kernel, means included) {plait_ms(M, N, host):8.4f} ms")
            print(lines[-1], flush=True)
    if args.out:
        with open(os.path.join(args.out, "triangle_variants.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
