#!/usr/bin/env python3
"""scripts/gpu_proof.sh run --dry-run on this build (lavapipe): every file the GPU run writes
is there and parses, the suites' results reach summary.md, and a failing suite is reported
as failed there and in the exit status. Two suites only, one quick test of test_matmul, and
test_attention replaced by `false` (GPU_PROOF_FAIL_TEST): what is checked is the script, not
the suites, which have CTest entries of their own.

usage: gpu_proof_test.py PATH/TO/scripts/gpu_proof.sh BUILD_DIR
"""

import json
import os
import subprocess
import sys
import tempfile

from cli_checks import fail, finish

SCRIPT, BUILD = sys.argv[1], sys.argv[2]

with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "proof")
    env = dict(os.environ, GPU_PROOF_SUITES="ops/test_matmul ops/test_attention",
               GPU_PROOF_FILTER="Matmul_.ResidualMayBeTheOutput", GPU_PROOF_FAIL_TEST="test_attention",
               GPU_PROOF_PYTHON=sys.executable)
    proc = subprocess.run(["bash", SCRIPT, "run", out, "--dry-run", "--build", BUILD, "--budget", "100",
                           "--tar", os.path.join(tmp, "proof.tgz")], env=env, capture_output=True, text=True,
                          timeout=170)
    print(proc.stderr[-3000:])
    if proc.returncode != 1:
        fail("run --dry-run with a failing suite exited %d, expected 1" % proc.returncode)
    if proc.stdout.strip().splitlines()[-1:] != [os.path.join(out, "summary.md")]:
        fail("last output line is not summary.md's path: %r" % proc.stdout[-200:])

    docs = {}
    for name in ["vkf-info.json", "bench-attention.json", "bench-model-bloom.json", "torch-bench.json",
                 "logits.json", "tests/test_matmul.json"]:
        try:
            with open(os.path.join(out, name)) as f:
                docs[name] = json.load(f)
        except (OSError, ValueError) as e:
            fail("%s: %s" % (name, e))
    if "devices" in docs.get("vkf-info.json", {}) and not docs["vkf-info.json"]["devices"]:
        fail("vkf-info.json lists no device")
    for name in ["bench-attention.json", "bench-model-bloom.json"]:
        results = docs.get(name, {}).get("results", [])
        if not results or any(r["status"] != "ok" for r in results):
            fail("%s: %d results, statuses %s" % (name, len(results), sorted({r["status"] for r in results})))
    if not docs.get("bench-attention.json", {}).get("ceilings", {}).get("bandwidth_gbps"):
        fail("bench-attention.json has no measured copy bandwidth")
    torch = docs.get("torch-bench.json", {})
    if torch.get("results") == [] and not torch.get("note", "").startswith("skipped"):
        fail("torch-bench.json: no results and no reason: %r" % torch)
    models = docs.get("logits.json", {}).get("models", [])
    if len(models) != 4 or any(m.get("error") or not m.get("vkf_check_max_rel", 1) < 2e-3 for m in models):
        fail("logits.json: %r" % models)
    if docs.get("tests/test_matmul.json", {}).get("tests") != 1:
        fail("test_matmul ran %r tests, the filter gives 1" % docs.get("tests/test_matmul.json", {}).get("tests"))

    with open(os.path.join(out, "summary.md")) as f:
        summary = f.read()
    for row in ["| test_matmul | pass | 1 | 0 | 1 | 0 | yes |", "| test_attention | FAIL |", "Ceilings: copy ",
                "bloom-560m prefill f16 tiled q=64 kv=64 | ok", "| bloom-f16 | ", "| bench-model-bloom | ok |"]:
        if row not in summary:
            fail("summary.md lacks %r:\n%s" % (row, summary))
    if not os.path.getsize(os.path.join(tmp, "proof.tgz")):
        fail("--tar wrote nothing")

sys.exit(finish("run --dry-run wrote every file, and reported the failing suite"))
