"""Hand-written CUDA variants of element-wise kernels (vector add, in-place
saxpy, a 3-point stencil), timed side by side with CuPy RawKernels: how many
elements a thread should take, and whether 16-byte accesses pay, before the
CUDA back end's code generator is changed to emit the winner.

    python benchmarks/cuda_elementwise_variants.py [--out DIR]

Variants: `plain` (one element per thread, grid-stride, 64-bit indices, as
Plait emitted before), `batchU` (U elements per thread, a block covering
256*U consecutive elements, element u of thread t at 256*u + t; all loads
before all stores), `vecW` (W 16-byte vectors per thread, coalesced the same
way). Timing: CUDA events, L2 flushed before each run, median of 20.
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

HEAD = "// 64-bit indices as Plait emits them\n"


def source(t, vt, vw):
    """Kernels for element type t, 16-byte vector type vt of vw elements."""
    out = [HEAD]
    body = {
        "vadd": ("const {t}* a, const {t}* b, {t}* out", "out[k] = a[k] + b[k];"),
        "saxpy": ("{t} alpha, const {t}* x, {t}* y", "y[k] = alpha * x[k] + y[k];"),
    }
    for name, (params, stmt) in body.items():
        p = params.format(t=t)
        out.append(f"""
extern "C" __global__ void __launch_bounds__(256) plain_{name}({p}, int64_t n) {{
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {{ {stmt} }}
}}""")
    for u in (2, 4, 8):
        out.append(f"""
extern "C" __global__ void __launch_bounds__(256) batch{u}_vadd({t}* a, {t}* b, {t}* out, int64_t n) {{
  const int64_t stride = (int64_t)gridDim.x * blockDim.x * {u};
  for (int64_t k0 = (int64_t)blockIdx.x * blockDim.x * {u} + threadIdx.x; k0 < n; k0 += stride) {{
    {t} v[{u}];
#pragma unroll
    for (int u = 0; u < {u}; ++u) {{ const int64_t k = k0 + u * 256; if (k < n) v[u] = a[k] + b[k]; }}
#pragma unroll
    for (int u = 0; u < {u}; ++u) {{ const int64_t k = k0 + u * 256; if (k < n) out[k] = v[u]; }}
  }}
}}
extern "C" __global__ void __launch_bounds__(256) batch{u}_saxpy({t} alpha, {t}* x, {t}* y, int64_t n) {{
  const int64_t stride = (int64_t)gridDim.x * blockDim.x * {u};
  for (int64_t k0 = (int64_t)blockIdx.x * blockDim.x * {u} + threadIdx.x; k0 < n; k0 += stride) {{
    {t} v[{u}];
#pragma unroll
    for (int u = 0; u < {u}; ++u) {{ const int64_t k = k0 + u * 256; if (k < n) v[u] = alpha * x[k] + y[k]; }}
#pragma unroll
    for (int u = 0; u < {u}; ++u) {{ const int64_t k = k0 + u * 256; if (k < n) y[k] = v[u]; }}
  }}
}}
extern "C" __global__ void __launch_bounds__(256) batch{u}_jacobi({t}* a, {t}* b, int64_t n) {{
  const int64_t total = n - 2;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x * {u};
  for (int64_t k0 = (int64_t)blockIdx.x * blockDim.x * {u} + threadIdx.x; k0 < total; k0 += stride) {{
    {t} v[{u}];
#pragma unroll
    for (int u = 0; u < {u}; ++u) {{ const int64_t i = 1 + k0 + u * 256; if (i - 1 < total) v[u] = ({t})0.33333 * (a[i - 1] + a[i] + a[i + 1]); }}
#pragma unroll
    for (int u = 0; u < {u}; ++u) {{ const int64_t i = 1 + k0 + u * 256; if (i - 1 < total) b[i] = v[u]; }}
  }}
}}""")
    for name, params, calc in (("vadd", f"{t}* a, {t}* b, {t}* out", "a[k] + b[k]"),
                               ("saxpy", f"{t} alpha, {t}* a, {t}* out", "alpha * a[k] + out[k]")):
        out.append(f"""
extern "C" __global__ void __launch_bounds__(256) batchf4_{name}({params}, int64_t n) {{
  const int64_t stride = (int64_t)gridDim.x * blockDim.x * 4;
  for (int64_t k0 = (int64_t)blockIdx.x * blockDim.x * 4 + threadIdx.x; k0 < n; k0 += stride) {{
    {t} v[4];
    if (k0 + 3 * 256 < n) {{
#pragma unroll
      for (int u = 0; u < 4; ++u) {{ const int64_t k = k0 + u * 256; v[u] = {calc}; }}
#pragma unroll
      for (int u = 0; u < 4; ++u) {{ const int64_t k = k0 + u * 256; out[k] = v[u]; }}
    }} else {{
      for (int u = 0; u < 4; ++u) {{ const int64_t k = k0 + u * 256; if (k < n) out[k] = {calc}; }}
    }}
  }}
}}""")
    out.append(f"""
extern "C" __global__ void __launch_bounds__(256) plain_jacobi({t}* a, {t}* b, int64_t n) {{
  const int64_t total = n - 2;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < total; k += stride) {{
    const int64_t i = 1 + k; b[i] = ({t})0.33333 * (a[i - 1] + a[i] + a[i + 1]);
  }}
}}""")
    lanes = "xyzw"[:vw]
    for w in (1, 2):
        for name, params, expr in (("vadd", f"{t}* a, {t}* b, {t}* out", "A.{c} + B.{c}"),
                                   ("saxpy", f"{t} alpha, {t}* a, {t}* out", "alpha * A.{c} + B.{c}")):
            second = "b" if name == "vadd" else "out"
            calc = ", ".join(expr.format(c=c) for c in lanes)
            scalar = "a[k] + b[k]" if name == "vadd" else "alpha * a[k] + out[k]"
            out.append(f"""
extern "C" __global__ void __launch_bounds__(256) vec{w}_{name}({params}, int64_t n) {{
  const int64_t groups = n / {vw};
  const int64_t stride = (int64_t)gridDim.x * blockDim.x * {w};
  for (int64_t g0 = (int64_t)blockIdx.x * blockDim.x * {w} + threadIdx.x; g0 < groups; g0 += stride) {{
    {vt} v[{w}];
#pragma unroll
    for (int u = 0; u < {w}; ++u) {{
      const int64_t g = g0 + u * 256;
      if (g < groups) {{ const {vt} A = reinterpret_cast<const {vt}*>(a)[g]; const {vt} B = reinterpret_cast<const {vt}*>({second})[g]; v[u] = {vt}{{{calc}}}; }}
    }}
#pragma unroll
    for (int u = 0; u < {w}; ++u) {{ const int64_t g = g0 + u * 256; if (g < groups) reinterpret_cast<{vt}*>(out)[g] = v[u]; }}
  }}
  if (blockIdx.x == 0) for (int64_t k = groups * {vw} + threadIdx.x; k < n; k += blockDim.x) out[k] = {scalar};
}}""")
    return "\n".join(out).replace("int64_t", "long long")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.environ.get("OUT", ""))
    p.add_argument("--repeat", type=int, default=20)
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
    dev = cp.cuda.runtime.getDeviceProperties(0)
    say(f"GPU {dev['name'].decode()}, copy {bw / 1e12:.2f} TB/s")
    say("| kernel | dtype | n | variant | ms | % copy BW | ok |")
    say("|---|---|---|---|---|---|---|")
    for t, vt, vw, np_t in (("float", "float4", 4, np.float32), ("double", "double2", 2, np.float64)):
        mod = cp.RawModule(code=source(t, vt, vw), options=("--std=c++17",))
        es = np.dtype(np_t).itemsize
        for n in ((1 << 25) // es, (1 << 28) // es, (1 << 25) // es + 3):
            rng = np.random.default_rng(1)
            a = cp.asarray(rng.random(n).astype(np_t))
            b = cp.asarray(rng.random(n).astype(np_t))
            out = cp.empty_like(a)
            alpha = np_t(0.5)
            ref_add = a + b
            variants = ["plain"] + [f"batch{u}" for u in (2, 4, 8)] + ["batchf4", "vec1", "vec2"]
            for kname, nbytes_moved in (("vadd", 3 * es * n), ("saxpy", 3 * es * n), ("jacobi", 2 * es * n)):
                for var in variants:
                    if kname == "jacobi" and (var.startswith("vec") or var == "batchf4"):
                        continue
                    fn = mod.get_function(f"{var}_{kname}")
                    per = 1
                    if var.startswith("batch"):
                        per = int(var[-1])
                    elif var.startswith("vec"):
                        per = int(var[3:]) * vw
                    blocks = max(1, min(65536, -(-n // (256 * per))))
                    n64 = np.int64(n)
                    if kname == "vadd":
                        argv = (a, b, out, n64)
                    elif kname == "saxpy":
                        y = b.copy()
                        argv = (alpha, a, y, n64)
                    else:
                        argv = (a, out, n64)
                    out.fill(np_t(np.nan))
                    fn((blocks,), (256,), argv)
                    if kname == "vadd":
                        ok = bool(cp.allclose(out, ref_add))
                    elif kname == "saxpy":
                        ok = bool(cp.allclose(y, alpha * a + b))
                    else:
                        ref = np_t(0.33333) * (a[:-2] + a[1:-1] + a[2:])
                        ok = bool(cp.allclose(out[1:-1], ref))
                    ms = time_ms(lambda: fn((blocks,), (256,), argv))
                    pct = 100 * nbytes_moved / (ms * 1e-3) / bw
                    say(f"| {kname} | {t} | {n} | {var} | {ms:.4f} | {pct:.0f}% | {ok} |")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "elementwise_variants.md"), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
