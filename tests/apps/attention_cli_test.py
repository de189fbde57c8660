#!/usr/bin/env python3
"""End-to-end test of vkf-attention: writes random .npy inputs, runs the program with
--check over several option combinations, checks the output files (shape, dtype, and for
one case the values against a NumPy implementation), and checks that malformed inputs
fail with exit code 1 and errors that name the arrays.

usage: attention_cli_test.py PATH/TO/vkf-attention
"""

import os
import re
import sys
import tempfile

import cli_checks
from cli_checks import fail, finish

try:
    import numpy as np
except ImportError:
    print("skipped: this python3 has no numpy (Debian: apt-get install python3-numpy)")
    sys.exit(77)  # CTest's SKIP_RETURN_CODE for this test

EXE = sys.argv[1] if len(sys.argv) > 1 else None


def run(args):
    return cli_checks.run(EXE, args, timeout=600)


def reported_errors(stdout):
    """(max_rel, rel_l2) from the '--check' line."""
    match = re.search(r"check: max_rel ([^,]+), rel_l2 ([^,]+),", stdout)
    if not match:
        return None
    return float(match.group(1)), float(match.group(2))


def numpy_attention(q, k, v, max_bias=8.0):
    """Causal mask, causal ALiBi from the slope formula, default scale, all keys valid."""
    batch, q_len, n_head, head_dim = q.shape
    kv_len, n_kv_head = k.shape[1], k.shape[2]
    c = 1 << (n_head.bit_length() - 1)  # largest power of two <= n_head
    slopes = [2.0 ** (-max_bias * (h + 1) / c) if h < c else 2.0 ** (-max_bias / (2 * c) * (2 * (h - c) + 1))
              for h in range(n_head)]
    q64, k64, v64 = (t.astype(np.float64) for t in (q, k, v))
    positions = kv_len - q_len + np.arange(q_len)
    keys = np.arange(kv_len)
    out = np.zeros_like(q64)
    group = n_head // n_kv_head
    for b in range(batch):
        for h in range(n_head):
            s = q64[b, :, h, :] @ k64[b, :, h // group, :].T / np.sqrt(head_dim)
            s += slopes[h] * (keys[None, :] - positions[:, None])
            s[keys[None, :] > positions[:, None]] = -np.inf
            s -= s.max(axis=1, keepdims=True)
            p = np.exp(s)
            p /= p.sum(axis=1, keepdims=True)
            out[b, :, h, :] = p @ v64[b, :, h // group, :]
    return out


def expect_success(name, args, out_path, shape, dtype, tolerance):
    proc = run(args + ["--out", out_path, "--check"])
    if proc.returncode != 0:
        fail("%s: exit code %d\nstdout: %s\nstderr: %s" % (name, proc.returncode, proc.stdout, proc.stderr))
        return None
    errors = reported_errors(proc.stdout)
    if errors is None:
        fail("%s: no 'check:' line in output:\n%s" % (name, proc.stdout))
    elif not (errors[0] < tolerance and errors[1] < tolerance):
        fail("%s: reported errors %s exceed %g" % (name, errors, tolerance))
    out = np.load(out_path)
    if out.shape != shape or out.dtype != dtype:
        fail("%s: output has shape %s dtype %s, expected %s %s" % (name, out.shape, out.dtype, shape, dtype))
    if not np.all(np.isfinite(out)):
        fail("%s: output has non-finite values" % name)
    print("ok: %s: %s" % (name, proc.stdout.strip().splitlines()[-1]))
    return out


def expect_failure(name, args, code, words):
    proc = run(args)
    if proc.returncode != code:
        fail("%s: exit code %d, expected %d\nstderr: %s" % (name, proc.returncode, code, proc.stderr))
        return
    for word in words:
        if word not in proc.stderr:
            fail("%s: stderr does not mention %r:\n%s" % (name, word, proc.stderr))
            return
    print("ok: %s: %s" % (name, proc.stderr.strip()))


def main():
    if EXE is None:
        print(__doc__)
        return 2
    rng = np.random.default_rng(2024)
    with tempfile.TemporaryDirectory() as tmp:
        def path(name):
            return os.path.join(tmp, name)

        def save(name, array):
            np.save(path(name), array)
            return path(name)

        # GQA (6 query heads over 3 KV heads), a KV cache (q_len < kv_len), prime lengths.
        q_shape, kv_shape = (2, 7, 6, 64), (2, 19, 3, 64)
        q32 = rng.uniform(-1, 1, q_shape).astype(np.float32)
        k32 = rng.uniform(-1, 1, kv_shape).astype(np.float32)
        v32 = rng.uniform(-1, 1, kv_shape).astype(np.float32)
        q, k, v = save("q.npy", q32), save("k.npy", k32), save("v.npy", v32)
        q16, k16, v16 = (save(n, t.astype(np.float16)) for n, t in (("q16.npy", q32), ("k16.npy", k32),
                                                                       ("v16.npy", v32)))
        slopes = save("slopes.npy", rng.uniform(0.05, 1.0, q_shape[2]).astype(np.float32))
        kv_lens = save("kv_lens.npy", np.array([19, 4], dtype=np.int32))

        inputs = ["--q", q, "--k", k, "--v", v]
        inputs16 = ["--q", q16, "--k", k16, "--v", v16]

        out = expect_success("tiled f32", inputs, path("o1.npy"), q_shape, np.float32, 1e-5)
        if out is not None:
            expected = numpy_attention(q32, k32, v32)
            rel = np.abs(out - expected).max() / np.abs(expected).max()
            if not rel < 1e-5:
                fail("tiled f32: output differs from NumPy's attention by %g (max rel)" % rel)
        expect_success("naive f32", inputs + ["--naive"], path("o2.npy"), q_shape, np.float32, 1e-5)
        expect_success("tiled f16 inputs, symmetric, unmasked",
                       inputs16 + ["--mask", "none", "--alibi", "symmetric"], path("o3.npy"), q_shape,
                       np.float16, 2e-3)
        expect_success("naive f16 storage from f32 inputs", inputs + ["--naive", "--dtype", "f16"],
                       path("o4.npy"), q_shape, np.float16, 2e-3)
        expect_success("slope table, kv lens, scale, max bias, forced limits",
                       inputs + ["--slopes", slopes, "--kv-lens", kv_lens, "--scale", "0.2", "--max-bias", "4",
                                 "--limits", "workgroup_invocations=64,shared_memory=16K"],
                       path("o5.npy"), q_shape, np.float32, 1e-5)
        expect_success("naive, no alibi, kv lens, f32 storage from f16 inputs",
                       inputs16 + ["--naive", "--no-alibi", "--kv-lens", kv_lens, "--dtype", "f32"],
                       path("o6.npy"), q_shape, np.float32, 1e-5)

        bad_v = save("v_short.npy", rng.uniform(-1, 1, (2, 18, 3, 64)).astype(np.float32))
        expect_failure("mismatched K/V shapes", ["--q", q, "--k", k, "--v", bad_v], 1,
                       ["K", "V", "[2, 19, 3, 64]", "[2, 18, 3, 64]"])
        bad_k = save("k_int.npy", rng.integers(-5, 5, kv_shape).astype(np.int32))
        expect_failure("wrong K dtype", ["--q", q, "--k", bad_k, "--v", v], 1, ["K", "int32"])
        expect_failure("mixed dtypes", ["--q", q, "--k", k16, "--v", v16], 1, ["Q", "K", "float16"])
        expect_failure("missing --v", ["--q", q, "--k", k], 2, ["--v"])

    return finish("all vkf-attention checks passed")


if __name__ == "__main__":
    sys.exit(main())
