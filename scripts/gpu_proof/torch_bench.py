#!/usr/bin/env python3
"""PyTorch on the shapes vkf-bench measured (its result file): scaled_dot_product_attention with
the causal ALiBi bias as a float mask, and torch.matmul in fp16, timed with CUDA events on a
GPU (median of --reps after --warmup), with perf_counter on the CPU (--dry-run: torch 1.13
has no SDPA and no fp16 matmul on the CPU, so the same work in fp32 by hand). Writes JSON that
scripts/gpu_proof/summary.py matches to vkf-bench's results by shape.

usage: torch_bench.py --bench bench-attention.json [--bench bench-matmul.json] --out torch-bench.json [--dry-run]
Exit 77 (skipped) when torch does not import.
"""

import argparse
import json
import math
import statistics
import sys
import time


def alibi_slopes(n_head):
    # Press et al.'s slopes (BLOOM's and MPT's with alibi_bias_max 8) for n_head a power of two,
    # interleaved for the rest as BLOOM does; the timing does not depend on the values.
    closest = 2 ** math.floor(math.log2(n_head))
    base = [2 ** (-8 * (i + 1) / closest) for i in range(closest)]
    extra = [2 ** (-4 * (2 * i + 1) / closest) for i in range(n_head - closest)]
    return base + extra


def shapes_of(bench):
    """(kind, key, params) for each tiled attention and matmul result in vkf-bench's file."""
    for r in bench.get("results", []):
        p = r.get("params", {})
        if r.get("suite") == "attention" and p.get("impl") == "tiled" and "window" not in p:
            key = ["attention", p.get("batch", 1), p["n_head"], p["head_dim"], p["q_len"], p["kv_len"], p["dtype"]]
            yield "attention", key, p
        # Rows that force another arithmetic or kernel share their plan row's shape.
        elif r.get("suite") == "matmul" and p.get("arithmetic_choice") != "forced" and \
                p.get("kernel_choice") != "forced":
            yield "matmul", ["matmul", p["m"], p["n"], p["k"]], p


class Timer:
    def __init__(self, torch, cuda, warmup, reps):
        self.torch, self.cuda, self.warmup, self.reps = torch, cuda, warmup, reps

    def median_ms(self, fn):
        torch = self.torch
        for _ in range(self.warmup):
            fn()
        times = []
        for _ in range(self.reps):
            if self.cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            else:
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)


def attention_case(torch, timer, device, p, dtype_name):
    b, h, d, lq, lk = p.get("batch", 1), p["n_head"], p["head_dim"], p["q_len"], p["kv_len"]
    dtype = torch.float16 if dtype_name == "f16" and device != "cpu" else torch.float32
    g = torch.Generator(device=device).manual_seed(29)
    q = torch.randn(b, h, lq, d, device=device, dtype=dtype, generator=g)
    k = torch.randn(b, h, lk, d, device=device, dtype=dtype, generator=g)
    v = torch.randn(b, h, lk, d, device=device, dtype=dtype, generator=g)
    slopes = torch.tensor(alibi_slopes(h), device=device, dtype=torch.float32).view(1, h, 1, 1)
    rows = torch.arange(lk - lq, lk, device=device).view(lq, 1)  # the queries' positions
    cols = torch.arange(lk, device=device).view(1, lk)
    bias = slopes * (cols - rows).float()
    bias = bias.masked_fill(cols > rows, float("-inf")).to(dtype)  # causal ALiBi as one float mask
    sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    if sdpa is not None:
        def fn():
            return sdpa(q, k, v, attn_mask=bias)
        impl = "scaled_dot_product_attention"
    else:
        scale = 1.0 / math.sqrt(d)

        def fn():
            return torch.softmax(q @ k.transpose(-1, -2) * scale + bias, dim=-1) @ v
        impl = "softmax(QK^T*scale + bias) V (no SDPA in this torch)"
    with torch.no_grad():
        ms = timer.median_ms(fn)
    flops = 4.0 * b * h * lq * lk * d
    return {"ms": ms, "gflops": flops / ms / 1e6, "impl": impl, "dtype": str(dtype).replace("torch.", "")}


def matmul_case(torch, timer, device, p):
    m, n, k = p["m"], p["n"], p["k"]
    dtype = torch.float16 if device != "cpu" else torch.float32
    g = torch.Generator(device=device).manual_seed(29)
    x = torch.randn(m, k, device=device, dtype=dtype, generator=g)
    w = torch.randn(k, n, device=device, dtype=dtype, generator=g)
    with torch.no_grad():
        ms = timer.median_ms(lambda: torch.matmul(x, w))
    return {"ms": ms, "gflops": 2.0 * m * n * k / ms / 1e6, "impl": "torch.matmul", "dtype": str(dtype).replace("torch.", "")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", action="append", required=True, help="a vkf-bench result file (repeatable)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    doc = {"results": []}
    try:
        import torch
    except ImportError as e:
        doc["note"] = "skipped: torch does not import (%s)" % e
        json.dump(doc, open(args.out, "w"), indent=1)
        print(doc["note"])
        return 77
    cuda = torch.cuda.is_available() and not args.dry_run
    device = "cuda" if cuda else "cpu"
    if args.dry_run:
        args.warmup, args.reps = 0, 2
    bench = {"results": []}
    for path in args.bench:
        try:
            with open(path) as f:
                bench["results"] += json.load(f).get("results", [])
        except (OSError, ValueError):
            pass  # a bench step that timed out: its shapes are missing
    if not bench["results"]:
        doc["note"] = "skipped: no vkf-bench result file to take the shapes from (%s)" % ", ".join(args.bench)
        json.dump(doc, open(args.out, "w"), indent=1)
        print(doc["note"])
        return 77
    doc.update({"torch": torch.__version__, "device": torch.cuda.get_device_name(0) if cuda else "cpu",
                "timer": "cuda events" if cuda else "perf_counter", "warmup": args.warmup, "reps": args.reps})
    doc["note"] = "torch %s on %s, %s, median of %d after %d warm-up" % (doc["torch"], doc["device"], doc["timer"],
                                                                        args.reps, args.warmup)
    timer = Timer(torch, cuda, args.warmup, args.reps)
    for kind, key, p in shapes_of(bench):
        entry = {"kind": kind, "key": key, "params": p}
        try:
            entry.update(attention_case(torch, timer, device, p, p["dtype"]) if kind == "attention"
                         else matmul_case(torch, timer, device, p))
        except Exception as e:  # out of memory, say: recorded, the rest still runs
            entry["error"] = "%s: %s" % (type(e).__name__, str(e)[:200])
            if cuda:
                torch.cuda.empty_cache()
        doc["results"].append(entry)
        print(json.dumps({k: entry.get(k) for k in ("key", "ms", "gflops", "error")}), flush=True)
        with open(args.out, "w") as f:  # after each case, so that a timeout keeps what ran
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
