"""Sparse attention over affine patterns on the GPU: plait.attention against
PyTorch's FlexAttention and SDPA, validated, then timed.

    python -m plait.bench attention [--patterns sliding,dilated4] [--seq-lens 4096,16384,32768]
                                    [--heads 16] [--head-dim 64] [--batch 1] [--dtype bfloat16]
                                    [--peers plait,flex,sdpa-mask,sdpa-causal,plait-unfused]
                                    [--repeat 10] [--time-budget 5] [--out DIR]

Patterns (plait.sparse.acsr, docs/attention.md), for a sequence of S keys:
    sliding        sliding(S, 256)
    causal_window  causal_window(S, 512)
    dilated2/4/8   dilated(S, 512, 2 / 4 / 8)
    strided        strided(S, 64)
    blocked        blocked(S, 128)
    global_window  global_window(S, 256, 16)

Peers, in one run on the same CUDA tensors (batch, heads, S, head dim):
    plait          plait.attention(q, k, v, P): the fused kernel for bfloat16
                   and float16, the generated operator program otherwise
    flex           torch.compile(flex_attention), compiled for each pattern and
                   length, with the BlockMask of the same mask_mod (both made
                   outside the timing)
    sdpa-mask      torch's scaled_dot_product_attention with the dense boolean mask
    sdpa-causal    scaled_dot_product_attention(is_causal=True), for the causal
                   patterns (causal_window, strided) only: it computes the whole
                   lower triangle, a superset of their scores, so it is timed
                   and not compared
    plait-unfused  plait.attention(..., fused=False): the generated kernels
                   (sampled product, softmax, product with v) in float32, one
                   call per (batch, head): the ablation of the fused kernel
Each peer's output (but sdpa-causal's) is compared with a reference, SDPA
with the dense mask on float32 copies (absolute error: bfloat16 3e-2,
float16 4e-3, float32 1e-3, float64 1e-9); the timed statement is one call
plus a device synchronisation; the median of --repeat runs (fewer past
--time-budget seconds, at least 2). Ratios are peer time over Plait's
(above 1: Plait is faster).
"""

import argparse
import csv
import os
import time

import numpy as np

from .npbench import format_time, geomean, machine_description

PATTERNS = {
    "sliding": (lambda a, S: a.sliding(S, 256), lambda q, kv: abs(q - kv) <= 256),
    "causal_window": (lambda a, S: a.causal_window(S, 512), lambda q, kv: (q >= kv) & (q - kv <= 512)),
    "dilated2": (lambda a, S: a.dilated(S, 512, 2), lambda q, kv: (abs(q - kv) <= 512) & ((q - kv) % 2 == 0)),
    "dilated4": (lambda a, S: a.dilated(S, 512, 4), lambda q, kv: (abs(q - kv) <= 512) & ((q - kv) % 4 == 0)),
    "dilated8": (lambda a, S: a.dilated(S, 512, 8), lambda q, kv: (abs(q - kv) <= 512) & ((q - kv) % 8 == 0)),
    "strided": (lambda a, S: a.strided(S, 64), lambda q, kv: (q >= kv) & ((q - kv) % 64 == 0)),
    "blocked": (lambda a, S: a.blocked(S, 128), lambda q, kv: q // 128 == kv // 128),
    "global_window": (lambda a, S: a.global_window(S, 256, 16),
                      lambda q, kv: (abs(q - kv) <= 256) | (q < 16) | (kv < 16)),
}
PEERS = ("plait", "flex", "sdpa-mask", "sdpa-causal", "plait-unfused")
CAUSAL = ("causal_window", "strided")  # patterns inside the lower triangle
TOLERANCE = {"bfloat16": 3e-2, "float16": 4e-3, "float32": 1e-3, "float64": 1e-9}


def _peers(names, torch, pattern, mask_mod, shape, causal):
    """name -> a function of (q, k, v), for the peers that can run here."""
    import plait

    s = shape[2]
    made = {}
    for name in names:
        if name == "plait":
            made[name] = lambda q, k, v: plait.attention(q, k, v, pattern)
        elif name == "plait-unfused":
            made[name] = lambda q, k, v: plait.attention(q, k, v, pattern, fused=False)
        elif name == "sdpa-causal":
            if causal:
                made[name] = lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        elif name == "flex":
            try:
                from torch.nn.attention.flex_attention import create_block_mask, flex_attention
            except ImportError as e:
                print(f"note: flex skipped: {e}")
                continue
            # Compiled afresh for each pattern and length (untimed, in the first
            # call): one compiled function recompiled for the next patterns ran
            # 5-35x slower past the first few.
            torch._dynamo.reset()
            flex = torch.compile(flex_attention)
            # One mask for every batch and head (mask_mod reads neither): None broadcasts them.
            block_mask = create_block_mask(lambda bb, hh, q, kv: mask_mod(q, kv), None, None, s, s)
            made[name] = lambda q, k, v, f=flex, m=block_mask: f(q, k, v, block_mask=m)
        elif name == "sdpa-mask":
            dense = torch.from_numpy(pattern.mask()).cuda()
            made[name] = lambda q, k, v, m=dense: torch.nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=m)
    return made


def _time(fn, args, repeat, budget_s, torch):
    fn(*args)
    torch.cuda.synchronize()
    times = []
    while len(times) < repeat and (len(times) < 2 or sum(times) < budget_s):
        start = time.perf_counter()
        fn(*args)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m plait.bench attention", description=__doc__.split("\n")[0])
    parser.add_argument("--patterns", default=",".join(PATTERNS))
    parser.add_argument("--seq-lens", default="4096,16384,32768")
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--dtype", default="bfloat16", choices=list(TOLERANCE))
    parser.add_argument("--peers", default=",".join(PEERS))
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--time-budget", type=float, default=5.0)
    parser.add_argument("--out", default="bench-results")
    args = parser.parse_args(argv)
    import torch

    from plait.sparse import acsr

    if not torch.cuda.is_available():
        print("plait.bench attention runs on a CUDA GPU; none is available")
        return 1
    dtype = getattr(torch, args.dtype)
    peers = [p for p in args.peers.split(",") if p]
    rows = []
    for name in args.patterns.split(","):
        make, mask_mod = PATTERNS[name]
        for seq_len in (int(s) for s in args.seq_lens.split(",")):
            pattern = make(acsr, seq_len)
            shape = (args.batch, args.heads, seq_len, args.head_dim)
            gen = torch.Generator(device="cuda").manual_seed(0)
            q, k, v = (torch.randn(shape, device="cuda", dtype=dtype, generator=gen) for _ in range(3))
            fns = _peers(peers, torch, pattern, mask_mod, shape, name in CAUSAL)
            dense = torch.from_numpy(pattern.mask()).cuda()
            wide = torch.float64 if dtype == torch.float64 else torch.float32
            reference = torch.nn.functional.scaled_dot_product_attention(q.to(wide), k.to(wide), v.to(wide),
                                                                         attn_mask=dense)
            # A row without kept keys: SDPA gives NaN, plait.attention and FlexAttention zeros.
            reference = torch.nan_to_num(reference, nan=0.0)
            del dense
            row = {"pattern": name, "seq_len": seq_len, "kept": pattern.nnz / float(seq_len) ** 2}
            for peer, fn in fns.items():
                try:
                    out = fn(q, k, v)
                    if peer != "sdpa-causal":
                        error = float((torch.nan_to_num(out.to(wide), nan=0.0) - reference).abs().max())
                        if not error <= TOLERANCE[args.dtype]:
                            raise AssertionError(f"differs from the reference by {error:.3g}")
                    row[peer] = _time(fn, (q, k, v), args.repeat, args.time_budget, torch)
                except Exception as e:  # a peer that fails is reported, the suite goes on
                    row[peer] = float("nan")
                    print(f"note: {peer} on {name} / {seq_len}: {type(e).__name__}: {str(e)[:200]}")
            rows.append(row)
            print(f"{name} / {seq_len}: " + ", ".join(f"{p} {format_time(row[p])}" for p in fns), flush=True)
            del q, k, v, fns, reference
            torch.cuda.empty_cache()
    others = [p for p in peers if p != "plait"]
    print(f"\nSparse attention ({args.dtype}, batch {args.batch}, {args.heads} heads, head dim {args.head_dim})")
    if "plait" in peers:
        print("plait: " + ("the fused kernel" if args.dtype in ("bfloat16", "float16") else
                           "the generated operator program (the fused kernel takes bfloat16 and float16)"))
    print(machine_description("cuda"))
    print("\n| pattern / S | kept | " + " | ".join(peers) + " | " + " | ".join(f"{p}/plait" for p in others) + " |")
    print("|---" * (2 + len(peers) + len(others)) + "|")
    ratios = {p: [] for p in others}
    for row in rows:
        cells = [f"{row['pattern']} / {row['seq_len']}", f"{100 * row['kept']:.2f}%"]
        cells += [format_time(row.get(p, float("nan"))) for p in peers]
        for p in others:
            r = row.get(p, float("nan")) / row.get("plait", float("nan"))
            if np.isfinite(r):
                ratios[p].append(r)
            cells.append(f"{r:.2f}x" if np.isfinite(r) else "-")
        print("| " + " | ".join(cells) + " |")
    cells = ["geomean", ""] + [""] * len(peers) + [f"{geomean(ratios[p]):.2f}x" if ratios[p] else "-" for p in others]
    print("| " + " | ".join(cells) + " |")
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"attention_{args.dtype}_b{args.batch}_h{args.heads}_d{args.head_dim}.csv")
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["pattern", "seq_len", "kept", *peers])
        for row in rows:
            writer.writerow([row["pattern"], row["seq_len"], row["kept"], *(row.get(p, "") for p in peers)])
    print(f"\nwrote {path}")
    return 0
