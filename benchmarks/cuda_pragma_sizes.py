"""Sizes from the sliced pragmas on CUDA (docs/cuda.md, "Sizes from the
pragmas") against the host's choice of team, and torch: row sums of float32
rows (`:N=>reduce(sum)` alone, a serial loop per row; `simd`, the team
chosen at launch; `le(512)`, a constant team of 32; `single_block`, the
block of 256), short rows (16 to 512 elements), the loop softmax over rows
of 512 (`simd` against `le(512)`, docs/cuda.md "Teams of a warp") and CSR
row sums (no pragma, `simd`, `le(64)`).

    python benchmarks/cuda_pragma_sizes.py

Timing: CUDA events around each call (the whole call, its host work
included), median of 30 after 3 warm-up calls; no L2 flush (the row arrays
are 128 to 256 MB, beyond the 50 MB L2; the CSR arrays are not). Each
result is checked against torch first.
"""
import numpy as np
import torch

import plait


def row_sums(x, y):
    M, N = x.shape
    #pragma :M=>parallel :N=>reduce(sum)
    y[:M] = np.sum(x[:M, :N], axis=1)


def row_sums_simd(x, y):
    M, N = x.shape
    #pragma :M=>parallel :N=>simd,reduce(sum)
    y[:M] = np.sum(x[:M, :N], axis=1)


def row_sums_le(x, y):
    M, N = x.shape
    #pragma :M=>parallel :N=>le(512),reduce(sum)
    y[:M] = np.sum(x[:M, :N], axis=1)


def row_sums_single_block(x, y):
    M, N = x.shape
    #pragma :M=>parallel :N=>single_block,reduce(sum)
    y[:M] = np.sum(x[:M, :N], axis=1)


def csr_sums(rowptr, vals, y):
    #pragma parallel for
    for i in range(y.shape[0]):
        y[i] = np.sum(vals[rowptr[i]:rowptr[i + 1]])


def csr_sums_simd(rowptr, vals, y):
    #pragma parallel for
    for i in range(y.shape[0]):
        #pragma rowptr[i]:rowptr[i+1]=>simd,reduce(sum)
        y[i] = np.sum(vals[rowptr[i]:rowptr[i + 1]])


def csr_sums_le(rowptr, vals, y):
    #pragma parallel for
    for i in range(y.shape[0]):
        #pragma rowptr[i]:rowptr[i+1]=>le(64),reduce(sum)
        y[i] = np.sum(vals[rowptr[i]:rowptr[i + 1]])


def softmax_simd(x, out):
    M, N = x.shape
    #pragma parallel for
    for i in range(M):
        #pragma :N=>simd,reduce(max)
        m = np.max(x[i, :N])
        #pragma :N=>simd
        e = np.exp(x[i, :N] - m)
        #pragma :N=>simd,reduce(sum)
        s = np.sum(e[:N])
        #pragma :N=>simd
        out[i, :N] = e[:N] / s


def softmax_le(x, out):
    M, N = x.shape
    #pragma parallel for
    for i in range(M):
        #pragma :N=>le(512),reduce(max)
        m = np.max(x[i, :N])
        #pragma :N=>le(512)
        e = np.exp(x[i, :N] - m)
        #pragma :N=>le(512),reduce(sum)
        s = np.sum(e[:N])
        #pragma :N=>le(512)
        out[i, :N] = e[:N] / s


def timeit(fn, *args, runs=30):
    for _ in range(3):
        fn(*args)
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    return float(np.median(times))


def main():
    rng = np.random.default_rng(0)
    for rows, cols in ((65536, 512), (8192, 4096), (1 << 20, 64)):
        x = torch.tensor(rng.random((rows, cols), dtype=np.float32), device="cuda")
        y = torch.empty(rows, device="cuda")
        expected = x.sum(1)
        line = []
        for fn in (row_sums, row_sums_simd, row_sums_le, row_sums_single_block):
            kernel = plait.jit(fn, target="cuda")
            kernel(x, y)
            assert torch.allclose(y, expected, rtol=1e-4), fn.__name__
            line.append(f"{fn.__name__} {timeit(kernel, x, y):.4f}")
        line.append(f"torch.sum {timeit(lambda: x.sum(1)):.4f}")
        print(f"rows {rows}x{cols}:", ", ".join(line), "ms")
    # Short rows: 2**26 elements as rows of n, the team at launch (a warp
    # up to n = 512, then its _warp version) against le(512)'s constant team.
    for cols in (16, 32, 64, 128, 256, 512):
        x = torch.tensor(rng.random(((1 << 26) // cols, cols), dtype=np.float32), device="cuda")
        y = torch.empty(x.shape[0], device="cuda")
        line = []
        for fn in (row_sums_simd, row_sums_le):
            kernel = plait.jit(fn, target="cuda")
            kernel(x, y)
            assert torch.allclose(y, x.sum(1), rtol=1e-4), fn.__name__
            line.append(f"{fn.__name__} {timeit(kernel, x, y):.4f}")
        line.append(f"torch.sum {timeit(lambda: x.sum(1)):.4f}")
        print(f"rows {x.shape[0]}x{cols}:", ", ".join(line), "ms")
    # The loop softmax over rows of 512 (rows kept in registers): the team
    # at launch (a warp) against le(512)'s constant one, four rounds.
    x = torch.tensor(rng.random((1 << 19, 512), dtype=np.float32), device="cuda")
    out = torch.empty_like(x)
    kernels = {fn.__name__: plait.jit(fn, target="cuda") for fn in (softmax_simd, softmax_le)}
    for name, kernel in kernels.items():
        kernel(x, out)
        assert torch.allclose(out, torch.softmax(x, -1), atol=1e-6), name
    for round_ in range(4):
        line = [f"{name} {timeit(kernel, x, out, runs=40):.4f}" for name, kernel in kernels.items()]
        line.append(f"torch.softmax {timeit(lambda: torch.softmax(x, -1), runs=40):.4f}")
        print(f"softmax 524288x512, round {round_}:", ", ".join(line), "ms")
    for rows, mean in ((1 << 20, 10), (1 << 18, 60)):
        lengths = rng.integers(0, 2 * mean + 1, size=rows)
        rowptr = torch.tensor(np.concatenate([[0], np.cumsum(lengths)]), device="cuda")
        vals = torch.tensor(rng.random(int(lengths.sum()), dtype=np.float32), device="cuda")
        y = torch.empty(rows, device="cuda")
        expected = torch.segment_reduce(vals, "sum", offsets=rowptr)
        line = []
        for fn in (csr_sums, csr_sums_simd, csr_sums_le):
            kernel = plait.jit(fn, target="cuda")
            kernel(rowptr, vals, y)
            assert torch.allclose(y, expected, rtol=1e-4, atol=1e-4), fn.__name__
            line.append(f"{fn.__name__} {timeit(kernel, rowptr, vals, y):.4f}")
        print(f"csr {rows} rows, mean {mean}:", ", ".join(line), "ms")


if __name__ == "__main__":
    main()
