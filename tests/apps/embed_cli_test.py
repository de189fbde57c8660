#!/usr/bin/env python3
"""End-to-end test of vkf-embed on small random JinaBERT checkpoints written by
vkf-make-checkpoint --family jina-bert (fp32, and fp16 with the bert. prefix): every pooling
with --check against the CPU reference (the reported error parsed and bounded), the .npy
shapes and finite values, the pooled files against the token states (mean of the rows, first
row, unit norm with --normalize), and the errors and exit codes for bad command lines, ids
outside the vocabulary, a missing model and a missing tokenizer.

usage: embed_cli_test.py PATH/TO/vkf-embed PATH/TO/vkf-make-checkpoint
"""

import ast
import math
import os
import re
import struct
import sys
import tempfile

from cli_checks import expect_refused, fail, finish, run

EMBED, MAKE = sys.argv[1], sys.argv[2]
IDS = "3,1,4,1,5,9,2,6,5,3,5"  # 11 tokens


def load_npy(path):
    """(shape, values) of a little-endian float32 C-order .npy file; no NumPy needed."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise SystemExit("%s is not a .npy file" % path)
    header_len = struct.unpack("<H", data[8:10])[0] if data[6] == 1 else struct.unpack("<I", data[8:12])[0]
    start = 10 if data[6] == 1 else 12
    header = ast.literal_eval(data[start:start + header_len].decode("latin1"))
    if header["descr"] != "<f4" or header["fortran_order"]:
        raise SystemExit("%s: %r is not little-endian float32 in C order" % (path, header))
    shape = tuple(header["shape"])
    count = math.prod(shape)
    body = data[start + header_len:]
    if len(body) != 4 * count:
        raise SystemExit("%s: %d data bytes for shape %s" % (path, len(body), shape))
    return shape, list(struct.unpack("<%df" % count, body))


def close(a, b, rel):
    scale = max(max(abs(x) for x in b), 1e-30)
    return len(a) == len(b) and max(abs(x - y) for x, y in zip(a, b)) <= rel * scale


def make_model(path, args):
    proc = run(MAKE, ["--out", path, "--family", "jina-bert", "--seed", "7"] + args)
    if proc.returncode != 0:
        raise SystemExit("vkf-make-checkpoint failed: " + proc.stderr)


def embed(model, out, args, tolerance):
    """vkf-embed --check; the array written, or None (and a failure)."""
    proc = run(EMBED, ["--model", model, "--prompt-ids", IDS, "--out", out, "--check", "--quiet"] + args)
    if proc.returncode != 0:
        fail("vkf-embed %s exited %d: %s %s" % (" ".join(args), proc.returncode, proc.stdout, proc.stderr))
        return None
    match = re.search(r"largest relative error (\S+)", proc.stdout)
    if not match or not float(match.group(1)) < tolerance:
        fail("vkf-embed %s: --check reported %r" % (" ".join(args), proc.stdout))
    shape, values = load_npy(out)
    if not all(math.isfinite(v) for v in values):
        fail("vkf-embed %s wrote values that are not finite" % " ".join(args))
    return shape, values


def check_model(model, hidden, tmp, tolerance):
    tokens = len(IDS.split(","))
    states = embed(model, os.path.join(tmp, "none.npy"), ["--pooling", "none"], tolerance)
    mean = embed(model, os.path.join(tmp, "mean.npy"), [], tolerance)
    cls = embed(model, os.path.join(tmp, "cls.npy"), ["--pooling", "cls"], tolerance)
    unit = embed(model, os.path.join(tmp, "unit.npy"), ["--pooling", "mean", "--normalize"], tolerance)
    if states is None or mean is None or cls is None or unit is None:
        return
    for name, (shape, _), expected in (("none", states, (tokens, hidden)), ("mean", mean, (hidden,)),
                                       ("cls", cls, (hidden,)), ("mean --normalize", unit, (hidden,))):
        if shape != expected:
            fail("%s: shape %s, expected %s" % (name, shape, expected))
    if states[0] != (tokens, hidden):
        return
    rows = [states[1][t * hidden:(t + 1) * hidden] for t in range(tokens)]
    if not close(mean[1], [sum(column) / tokens for column in zip(*rows)], 1e-5):
        fail("mean pooling is not the mean of the token states")
    if cls[1] != rows[0]:
        fail("cls pooling is not the first token's state")
    norm = math.sqrt(sum(v * v for v in mean[1]))
    if abs(math.sqrt(sum(v * v for v in unit[1])) - 1.0) > 1e-5 or not close(unit[1], [v / norm for v in mean[1]], 1e-5):
        fail("--normalize does not give the unit vector of the mean")


with tempfile.TemporaryDirectory() as tmp:
    f32 = os.path.join(tmp, "f32")
    make_model(f32, ["--preset", "tiny", "--dtype", "f32"])
    check_model(f32, 96, tmp, 1e-5)
    # A symmetric key window (|i - j| <= 2) against the windowed reference; it changes the states.
    windowed = embed(f32, os.path.join(tmp, "window.npy"), ["--pooling", "none", "--window", "2"], 1e-5)
    full = load_npy(os.path.join(tmp, "none.npy"))
    if windowed is not None and close(windowed[1], full[1], 1e-6):
        fail("--window 2 gives the states of full attention")
    # 5 heads of 64, fp16 weights, tensors named bert.* as in JinaBertForMaskedLM checkpoints.
    f16 = os.path.join(tmp, "f16")
    make_model(f16, ["--layers", "1", "--hidden", "320", "--heads", "5", "--vocab", "300", "--dtype", "f16",
                     "--bert-prefix"])
    check_model(f16, 320, tmp, 1e-5)

    out = os.path.join(tmp, "bad.npy")
    expect_refused(EMBED, ["--model", f32, "--prompt-ids", "1,2"], 2, "--out is required")
    expect_refused(EMBED, ["--model", f32, "--out", out], 2, "give the input with --prompt or --prompt-ids")
    expect_refused(EMBED, ["--model", f32, "--out", out, "--prompt-ids", "1", "--prompt", "x"], 2,
                   "give the input once")
    expect_refused(EMBED, ["--model", f32, "--out", out, "--prompt-ids", "1,x"], 2, "--prompt-ids")
    expect_refused(EMBED, ["--model", f32, "--out", out, "--prompt-ids", "1", "--pooling", "max"], 2, "--pooling")
    expect_refused(EMBED, ["--model", f32, "--out", out, "--prompt-ids", "1", "--pooling", "none", "--normalize"], 2,
                   "--normalize applies to a pooled embedding")
    expect_refused(EMBED, ["--model", f32, "--out", out, "--prompt-ids", "1,2,512"], 1,
                   "token id 512 at input position 2 is not below the vocabulary size 512")
    expect_refused(EMBED, ["--model", os.path.join(tmp, "absent"), "--out", out, "--prompt-ids", "1"], 1, "absent")
    expect_refused(EMBED, ["--model", f32, "--out", out, "--prompt", "hello"], 1, "tokenizer.json")
    proc = run(EMBED, ["--model", f32, "--out", out, "--prompt-ids", IDS, "--check", "--check-tolerance", "1e-12"])
    if proc.returncode != 3:
        fail("--check above --check-tolerance: expected exit 3, got %d: %s" % (proc.returncode, proc.stderr))
    os.remove(out)
    if os.path.exists(out):
        fail("a refused run left %s behind" % out)
    expect_refused(MAKE, ["--family", "jina-bert", "--preset", "tiny"], 2, "--out is required")
    expect_refused(MAKE, ["--family", "jina-bert", "--out", out, "--hidden", "100", "--heads", "3", "--layers", "1",
                          "--vocab", "10"], 2, "not a multiple of --heads")

sys.exit(finish("vkf-embed: every pooling within tolerance of the reference, every bad input refused"))
