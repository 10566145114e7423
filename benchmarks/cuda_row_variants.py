"""Hand-written CUDA variants of two row-wise team kernels (the loop softmax
and gesummv of benchmarks/gpu_kernels.py), timed side by side with CuPy
RawKernels against the Plait call itself: which of 16-byte accesses, the
row's exp kept in registers, team size and unrolling pay, before the CUDA
back end's code generator is changed to emit the winner.

    python benchmarks/cuda_row_variants.py [--out DIR] [--repeat N]

A team of `team` consecutive threads works on one row, blocks of 256
threads, grid-stride over rows, as Plait's team workers do. A thread takes
groups of W consecutive elements (W = 1: elements lane, lane + team, ...,
as Plait; W > 1: one W-element access per array and group). Softmax:
`slots` elements per thread stay in registers; `exp once` keeps exp(x - m)
in them after the sum, instead of computing it again for the output.
Timing: CUDA events, L2 flushed by a 256 MB write before each run, median.
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
#define INF __int_as_float(0x7f800000)
template <typename T, int N> struct alignas(sizeof(T) * N > 16 ? 16 : sizeof(T) * N) lanes { T v[N]; };

template <typename T> __device__ __forceinline__ T add(T a, T b) { return a + b; }
template <typename T> __device__ __forceinline__ T pymax(T a, T b) { return b > a ? b : a; }

// Every thread of the team gets the combination (as plait::team_combine).
template <typename T, bool MAX>
__device__ __forceinline__ T team_combine(T v, int team, T* part) {
  for (int o = 16; o > 0; o >>= 1) {
    T w = __shfl_down_sync(0xffffffffu, v, o);
    v = MAX ? pymax(v, w) : add(v, w);
  }
  if (team == 32) return __shfl_sync(0xffffffffu, v, 0);
  const int warp = threadIdx.x >> 5;
  if ((threadIdx.x & 31) == 0) part[warp] = v;
  if (team == 256) __syncthreads(); else asm volatile("bar.sync %0, %1;" : : "r"(1 + (int)threadIdx.x / team), "r"(team) : "memory");
  const int first = warp & ~(team / 32 - 1);
  T r = part[first];
  for (int w = 1; w < team / 32; ++w) r = MAX ? pymax(r, part[first + w]) : add(r, part[first + w]);
  if (team == 256) __syncthreads(); else asm volatile("bar.sync %0, %1;" : : "r"(1 + (int)threadIdx.x / team), "r"(team) : "memory");
  return r;
}

template <int W, int SLOTS, bool ONCE, bool VSTORE>
__device__ __forceinline__ void softmax(const float* x, float* out, long long rows, long long n, int team) {
  __shared__ float part[8];
  constexpr int G = SLOTS / W;
  const int lane = threadIdx.x & (team - 1);
  const long long groups = n / W;
  const long long stride = (long long)gridDim.x * blockDim.x / team;
  for (long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / team; i < rows; i += stride) {
    const float* xr = x + i * n;
    float* orow = out + i * n;
    float row[SLOTS];
    const int mine = groups > lane ? (int)min((groups - lane + team - 1) / team, (long long)G) : 0;
#pragma unroll
    for (int g = 0; g < G; ++g)
      if (g < mine) {
        const long long q = lane + (long long)g * team;
        const lanes<float, W> v = *reinterpret_cast<const lanes<float, W>*>(xr + q * W);
#pragma unroll
        for (int u = 0; u < W; ++u) row[g * W + u] = v.v[u];
      }
    float m = xr[0];
    float mm = -INF;
#pragma unroll
    for (int g = 0; g < G; ++g)
      if (g < mine)
#pragma unroll
        for (int u = 0; u < W; ++u) mm = pymax(mm, row[g * W + u]);
#pragma unroll 1
    for (long long q = lane + (long long)G * team; q < groups; q += team)
      for (int u = 0; u < W; ++u) mm = pymax(mm, xr[q * W + u]);
    for (long long k = groups * W + lane; k < n; k += team) mm = pymax(mm, xr[k]);
    m = pymax(m, team_combine<float, true>(mm, team, part));
    float s = 0.0f;
#pragma unroll
    for (int g = 0; g < G; ++g)
      if (g < mine)
#pragma unroll
        for (int u = 0; u < W; ++u) {
          const float e = expf(row[g * W + u] - m);
          if (ONCE) row[g * W + u] = e;
          s += e;
        }
#pragma unroll 1
    for (long long q = lane + (long long)G * team; q < groups; q += team)
      for (int u = 0; u < W; ++u) s += expf(xr[q * W + u] - m);
    for (long long k = groups * W + lane; k < n; k += team) s += expf(xr[k] - m);
    s = team_combine<float, false>(s, team, part);
#pragma unroll
    for (int g = 0; g < G; ++g)
      if (g < mine) {
        const long long q = lane + (long long)g * team;
        lanes<float, W> o;
#pragma unroll
        for (int u = 0; u < W; ++u) o.v[u] = (ONCE ? row[g * W + u] : expf(row[g * W + u] - m)) / s;
        if (VSTORE) *reinterpret_cast<lanes<float, W>*>(orow + q * W) = o;
        else
#pragma unroll
          for (int u = 0; u < W; ++u) orow[q * W + u] = o.v[u];
      }
#pragma unroll 1
    for (long long q = lane + (long long)G * team; q < groups; q += team)
      for (int u = 0; u < W; ++u) orow[q * W + u] = expf(xr[q * W + u] - m) / s;
    for (long long k = groups * W + lane; k < n; k += team) orow[k] = expf(xr[k] - m) / s;
  }
}

template <int W, int U>
__device__ __forceinline__ void gesummv(double alpha, double beta, const double* a, const double* b, const double* x,
                                        double* y, long long n, int team) {
  __shared__ double part[8];
  const int lane = threadIdx.x & (team - 1);
  const long long groups = n / W;
  const long long stride = (long long)gridDim.x * blockDim.x / team;
  for (long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / team; i < n; i += stride) {
    const double* ar = a + i * n;
    const double* br = b + i * n;
    double t = 0.0, s = 0.0;
#pragma unroll U
    for (long long q = lane; q < groups; q += team) {
      const lanes<double, W> av = *reinterpret_cast<const lanes<double, W>*>(ar + q * W);
      const lanes<double, W> bv = *reinterpret_cast<const lanes<double, W>*>(br + q * W);
      const lanes<double, W> xv = *reinterpret_cast<const lanes<double, W>*>(x + q * W);
#pragma unroll
      for (int u = 0; u < W; ++u) {
        t = t + av.v[u] * xv.v[u];
        s = s + bv.v[u] * xv.v[u];
      }
    }
    for (long long k = groups * W + lane; k < n; k += team) {
      t = t + ar[k] * x[k];
      s = s + br[k] * x[k];
    }
    t = team_combine<double, false>(t, team, part);
    s = team_combine<double, false>(s, team, part);
    if (lane == 0) y[i] = alpha * t + beta * s;
  }
}
"""

SOFTMAX = [  # (W, slots, exp once, vector store)
    (1, 8, False, False), (1, 8, True, False), (4, 8, False, False), (4, 8, False, True), (4, 8, True, False),
    (4, 8, True, True), (2, 8, True, True), (4, 16, True, True), (4, 4, True, True)]
GESUMMV = [(1, 4), (1, 8), (2, 1), (2, 2), (2, 4), (2, 8), (4, 1), (4, 2), (4, 4)]  # (W, unroll)


def kernels():
    out = [SOURCE]
    for w, slots, once, vstore in SOFTMAX:
        name = f"softmax_w{w}_s{slots}_{'once' if once else 'twice'}_{'vst' if vstore else 'st'}"
        out.append(f'extern "C" __global__ void __launch_bounds__(256) {name}(const float* x, float* o, '
                   f'long long r, long long n, int team) {{ softmax<{w}, {slots}, {str(once).lower()}, '
                   f'{str(vstore).lower()}>(x, o, r, n, team); }}')
    for w, u in GESUMMV:
        out.append(f'extern "C" __global__ void __launch_bounds__(256) gesummv_w{w}_u{u}(double al, double be, '
                   f'const double* a, const double* b, const double* x, double* y, long long n, int team) '
                   f'{{ gesummv<{w}, {u}>(al, be, a, b, x, y, n, team); }}')
    return "\n".join(out)


def plait_softmax(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        m = x[i, 0]
        #pragma simd reduction(max: m)
        for j1 in range(x.shape[1]):
            m = max(m, x[i, j1])
        s = 0.0
        #pragma simd reduction(+: s)
        for j2 in range(x.shape[1]):
            s += np.exp(x[i, j2] - m)
        #pragma simd
        for j3 in range(x.shape[1]):
            out[i, j3] = np.exp(x[i, j3] - m) / s


def plait_gesummv(alpha, beta, a, b, x, y):
    #pragma parallel for
    for i in range(a.shape[0]):
        t = 0.0
        s = 0.0
        #pragma simd reduction(+: t, s)
        for j in range(a.shape[1]):
            t += a[i, j] * x[j]
            s += b[i, j] * x[j]
        y[i] = alpha * t + beta * s


def team_for(trip):
    team = 32
    while team < 256 and team * 4 < trip:
        team *= 2
    return team


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.environ.get("OUT", ""))
    p.add_argument("--repeat", type=int, default=30)
    args = p.parse_args()
    lines = []

    def say(s):
        print(s, flush=True)
        lines.append(s)

    flush = cp.empty(256 << 20 >> 2, dtype=cp.float32)
    start, stop = cp.cuda.Event(), cp.cuda.Event()

    def time_ms(fn):
        fn()
        fn()
        samples = []
        for _ in range(args.repeat):
            flush.fill(1.0)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            samples.append(cp.cuda.get_elapsed_time(start, stop))
        return statistics.median(samples)

    nbytes = 256 << 20
    src = cp.ones(nbytes // 4, dtype=cp.float32)
    dst = cp.empty_like(src)
    copy_ms = time_ms(lambda: cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes,
                                                           cp.cuda.runtime.memcpyDeviceToDevice, 0))
    bw = 2 * nbytes / (copy_ms * 1e-3)
    del src, dst
    dev = cp.cuda.runtime.getDeviceProperties(0)
    say(f"GPU {dev['name'].decode()}, copy {bw / 1e12:.2f} TB/s")
    mod = cp.RawModule(code=kernels(), options=("--std=c++17", "--fmad=false"))
    try:
        import plait
        p_softmax = plait.jit(target="cuda")(plait_softmax)
        p_gesummv = plait.jit(target="cuda")(plait_gesummv)
    except Exception as exc:  # noqa: BLE001
        say(f"plait unavailable: {exc}")
        p_softmax = p_gesummv = None
    say("| kernel | size | variant | team | ms | % copy BW | ok |")
    say("|---|---|---|---|---|---|---|")

    def grid(rows, team):
        return (max(1, min(65536, -(-rows * team // 256))),)

    rng = np.random.default_rng(1)
    for rows, n in ((2048, 2048), (8192, 8192), (4096, 1024), (4096, 4096)):
        x = cp.asarray((rng.random((rows, n), dtype=np.float32) * 8 - 4).astype(np.float32))
        out = cp.empty_like(x)
        x64 = x.astype(cp.float64)
        e = cp.exp(x64 - x64.max(axis=1, keepdims=True))
        ref = e / e.sum(axis=1, keepdims=True)
        del x64, e
        moved = 2 * 4 * rows * n

        def report(name, team, fn):
            out.fill(np.float32(np.nan))
            fn()
            ok = bool(cp.allclose(out, ref, rtol=1e-5, atol=1e-7))
            ms = time_ms(fn)
            say(f"| softmax | {rows}x{n} | {name} | {team} | {ms:.4f} | {100 * moved / (ms * 1e-3) / bw:.0f}% | {ok} |")

        if p_softmax is not None:
            try:
                report("plait call", team_for(n), lambda: p_softmax(x, out))
            except Exception as exc:  # noqa: BLE001
                say(f"plait softmax failed: {exc}")
        for w, slots, once, vstore in SOFTMAX:
            name = f"softmax_w{w}_s{slots}_{'once' if once else 'twice'}_{'vst' if vstore else 'st'}"
            fn = mod.get_function(name)
            teams = {team_for(n), team_for(n // w)}
            for team in sorted(teams):
                report(name[8:], team, lambda: fn(grid(rows, team), (256,), (x, out, np.int64(rows), np.int64(n),
                                                                               np.int32(team))))
        del x, out, ref
    for n in (2048, 8192):
        a = cp.asarray(rng.random((n, n)))
        b = cp.asarray(rng.random((n, n)))
        xv = cp.asarray(rng.random(n))
        y = cp.empty(n)
        ref = 1.5 * (a @ xv) + 1.2 * (b @ xv)
        moved = 2 * 8 * n * n + 16 * n

        def report(name, team, fn):
            y.fill(np.nan)
            fn()
            ok = bool(cp.allclose(y, ref, rtol=1e-10))
            ms = time_ms(fn)
            say(f"| gesummv | {n} | {name} | {team} | {ms:.4f} | {100 * moved / (ms * 1e-3) / bw:.0f}% | {ok} |")

        if p_gesummv is not None:
            try:
                report("plait call", team_for(n), lambda: p_gesummv(1.5, 1.2, a, b, xv, y))
            except Exception as exc:  # noqa: BLE001
                say(f"plait gesummv failed: {exc}")
        for w, u in GESUMMV:
            fn = mod.get_function(f"gesummv_w{w}_u{u}")
            for team in (32, 64, 128, 256):
                report(f"w{w}_u{u}", team, lambda: fn(grid(n, team), (256,), (np.float64(1.5), np.float64(1.2), a, b, xv, y, np.int64(n),
                                                                              np.int32(team))))
        del a, b
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "row_variants.md"), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
