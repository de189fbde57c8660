#!/usr/bin/env python3
"""vkf-run split by layers over MPI ranks (issue 31, docs/DISTRIBUTED.md), on lavapipe:
mpirun -n 2 and -n 3 give one process's generated ids and logits for BLOOM and MPT, f16 and
q4_0 weights, even and uneven splits (kjv-bloom, and seeded random 6-layer checkpoints);
--prompt-file --parallel under mpirun gives every prompt one process's ids; a rank whose
--split or model differs is named by every rank before loading; a rank killed (SIGKILL, as
kill -9) or stopped (SIGSTOP) in the middle of generation ends every rank non-zero within
60 s, the output naming it, and no --logits-out file is left.

usage: dist_run_test.py PATH/TO/vkf-run PATH/TO/vkf-make-checkpoint PATH/TO/vkf-quantize MODELS/kjv-bloom [--full]
Without --full (CI): each {family x dtype} once, -n 2 / -n 3 and even / uneven alternating:
kjv-bloom f16 on 2 ranks split auto by budgets (rank 1 under VKF_LIMITS, uneven), BLOOM q4_0
on 3 evenly, MPT f16 on 3 evenly, MPT q4_0 on 2 unevenly; a model over the ranks' budgets
refused, --parallel 3 on 2 ranks, another --split, Ctrl-C (SIGINT to mpirun), a stopped rank.
--full (label full): the cross product {BLOOM, MPT} x {f16, q4_0} x {2, 3 ranks} x {even,
uneven} on the random checkpoints, another model, a killed rank.
(VKF_MPIRUN: mpirun's path; mpirun's ranks inherit the environment: VKF_VALIDATION,
VK_ICD_FILENAMES.)
"""

import json
import os
import select
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps"))
from cli_checks import fail, finish  # noqa: E402

RUN, MAKE, QUANTIZE, KJV = sys.argv[1:5]
FULL = "--full" in sys.argv[5:]
MPIRUN = os.environ.get("VKF_MPIRUN", "mpirun")
PROMPT = ["--prompt-ids", "5,9,11,3,2,77,100,4,8,9,10", "--n-predict", "6", "--quiet", "--ignore-eos"]


def run(cmd, env_extra=None, timeout=120):
    env = dict(os.environ)
    env.update(env_extra or {})
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        fail("%s: still running after %d s: %r" % (" ".join(cmd), timeout, e.stderr))
        return None, timeout
    if "validation" in proc.stderr.lower():
        fail("Vulkan validation spoke during %s:\n%s" % (" ".join(cmd), proc.stderr))
    return proc, time.monotonic() - start


def mpirun(ranks, args, env_extra=None):
    return run([MPIRUN, "--oversubscribe", "-n", str(ranks), RUN] + args, env_extra)


def load_npy(path):
    import numpy as np
    return np.load(path)


ONE_PROCESS = {}  # (model, extra options) -> (its run, its logits file): one launch each


def one_process(model, extra, tmp):
    key = (model, tuple(extra))
    if key not in ONE_PROCESS:
        out = os.path.join(tmp, "one-%d.npy" % len(ONE_PROCESS))
        proc, _ = run([RUN, "--model", model, "--json", "--logits-out", out] + PROMPT + extra)
        ONE_PROCESS[key] = (proc, out)
    return ONE_PROCESS[key]


def compare(name, model, ranks, split, tmp, tolerance, last_limits=None, layers=None, extra=()):
    """One process against `ranks` ranks: the same ids, logits within `tolerance` (relative).
    last_limits: VKF_LIMITS of the last rank only (mpirun's MPMD form), a smaller memory budget
    for --split auto; layers: the [begin, end) ranges expected; extra: options of both runs."""
    many_out = os.path.join(tmp, "many.npy")
    one, one_out = one_process(model, list(extra), tmp)
    args = ["--model", model, "--json", "--logits-out", many_out] + PROMPT + list(extra) + (
        ["--split", split] if split else [])
    if last_limits:
        many, seconds = run([MPIRUN, "--oversubscribe", "-n", str(ranks - 1), RUN] + args +
                            [":", "-n", "1", "-x", "VKF_LIMITS=" + last_limits, RUN] + args)
    else:
        many, seconds = mpirun(ranks, args)
    what = "%s on %d ranks (--split %s%s%s)" % (name, ranks, split or "auto", ", last " + last_limits if last_limits
                                                else "", " ".join([""] + list(extra)))
    if one is None or many is None:
        return
    if one.returncode != 0 or many.returncode != 0 or not os.path.exists(one_out):
        fail("%s: exit %d / %d: %s %s" % (what, one.returncode, many.returncode, one.stderr, many.stderr))
        return
    a, b = json.loads(one.stdout), json.loads(many.stdout)
    if a["generated_ids"] != b["generated_ids"]:
        fail("%s: ids %s, one process %s" % (what, b["generated_ids"], a["generated_ids"]))
    if b["split"]["ranks"] != ranks or len(b["split"]["layers"]) != ranks or (layers and
                                                                              b["split"]["layers"] != layers):
        fail("%s: the JSON's split says %s, expected layers %s" % (what, b["split"], layers))
    la, lb = load_npy(one_out), load_npy(many_out)
    rel = float(abs(la - lb).max() / abs(la).max()) if la.shape == lb.shape else float("inf")
    print("%s: ids %s, logits max rel diff %.3g, layers %s, %.1f s" % (what, b["generated_ids"], rel,
                                                                    b["split"]["layers"], seconds))
    if not rel <= tolerance:
        fail("%s: logits differ from one process's by %.3g (tolerance %g)" % (what, rel, tolerance))
    os.remove(many_out)


def compare_parallel(tmp):
    """--prompt-file --parallel 3 on 2 ranks (the prompts' sequences pipelined over them):
    every prompt's ids as one process's --parallel 3, and the stages overlapped."""
    prompts = os.path.join(tmp, "prompts.txt")
    with open(prompts, "w") as f:
        f.write("In the beginning\nAnd God said\nLet there be light, and\nthe earth was without form\n"
                "And the evening and the morning were\n")
    args = ["--model", KJV, "--prompt-file", prompts, "--parallel", "3", "--n-predict", "8", "--quiet",
            "--ignore-eos", "--json"]
    one, _ = run([RUN] + args)
    many, seconds = mpirun(2, args)
    what = "--parallel 3 on 2 ranks"
    if one is None or many is None:
        return
    if one.returncode != 0 or many.returncode != 0:
        fail("%s: exit %d / %d: %s %s" % (what, one.returncode, many.returncode, one.stderr, many.stderr))
        return
    a, b = json.loads(one.stdout), json.loads(many.stdout)
    ids_a = [r["generated_ids"] for r in a["results"]]
    ids_b = [r["generated_ids"] for r in b["results"]]
    split = b["split"]
    print("%s: %d prompts, %d steps, %d overlapped, at most %d in flight, %.1f s" % (
        what, len(ids_b), split["steps"], split["overlapped"], split["max_in_flight"], seconds))
    if ids_a != ids_b or len(ids_a) != 5:
        fail("%s: ids %s, one process %s" % (what, ids_b, ids_a))
    if [r["text"] for r in a["results"]] != [r["text"] for r in b["results"]]:
        fail("%s: the texts differ from one process's" % what)
    if not (split["ranks"] == 2 and split["overlapped"] > 0 and split["max_in_flight"] == 2):
        fail("%s: the stages did not overlap: %s" % (what, split))


def expect_refusal(what, ranks, args, limits, needles):
    """Every rank refuses with every one of `needles` in its error, non-zero, before loading."""
    proc, seconds = run([MPIRUN, "--oversubscribe", "-n", str(ranks), "-x", "VKF_LIMITS=" + limits, RUN] + args)
    if proc is None:
        return
    print("%s: exit %d after %.1f s" % (what, proc.returncode, seconds))
    for r in range(ranks):
        lines = [x for x in proc.stderr.splitlines() if x.startswith("vkf-run: error: rank %d of %d:" % (r, ranks))]
        if proc.returncode == 0 or not lines or any(n not in lines[0] for n in needles):
            fail("%s: rank %d should refuse naming %s: %s" % (what, r, needles, proc.stderr))


def expect_interrupt(tmp):
    """SIGINT to mpirun (Ctrl-C; it sends SIGTERM to every rank) in the middle of generation:
    rank 0 prints its JSON with stop_reason "interrupted" and the tokens so far, no rank calls
    it an error, and the --logits-out file holds exactly those tokens' rows (or is absent)."""
    import numpy as np
    import signal
    out_path = os.path.join(tmp, "interrupted.npy")
    # A window: generation runs on past the context until interrupted.
    cmd = [MPIRUN, "--oversubscribe", "-n", "2", RUN, "--model", KJV, "--prompt-ids", "5,9,11", "--n-predict",
           "2000", "--ignore-eos", "--window", "16", "--ctx", "64", "--json", "--logits-out", out_path]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen = b""
    deadline = time.monotonic() + 60
    while b"generating: 1 of" not in seen and time.monotonic() < deadline and proc.poll() is None:
        # Never blocks past the deadline: the next progress line comes only at a quarter.
        if not select.select([proc.stderr], [], [], 1)[0]:
            continue
        chunk = os.read(proc.stderr.fileno(), 4096)
        if not chunk:
            break
        seen += chunk
    waited = 60 - (deadline - time.monotonic())
    proc.send_signal(signal.SIGINT)
    start = time.monotonic()
    try:
        stdout, stderr = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail("interrupted: mpirun still running 30 s after SIGINT")
        return
    stderr = (seen + stderr).decode(errors="replace")
    what = "SIGINT to mpirun"
    print("%s: sent %.1f s after the start, exit %d %.1f s after it" % (what, waited, proc.returncode,
                                                                       time.monotonic() - start))
    try:
        result = json.loads(stdout)
    except ValueError:
        fail("%s: rank 0 printed no JSON: %r %s" % (what, stdout, stderr))
        return
    ids = result["generated_ids"]
    if result["stop_reason"] != "interrupted" or not 1 <= len(ids) < 2000:
        fail("%s: stop_reason %s after %d tokens" % (what, result["stop_reason"], len(ids)))
    if "error" in stderr:
        fail("%s: a rank called it an error: %s" % (what, stderr))
    if os.path.exists(out_path) and np.load(out_path).shape[0] != len(ids):
        fail("%s: the logits file has %d rows for %d tokens" % (what, np.load(out_path).shape[0], len(ids)))
    leftovers = [f for f in os.listdir(tmp) if f.startswith("interrupted") and f != "interrupted.npy"]
    if leftovers:
        fail("%s: left %s behind" % (what, leftovers))


def expect_fault(what, ranks, args, env_extra, failed, survivors, needle, tmp):
    out_path = os.path.join(tmp, "fault.npy")
    proc, seconds = mpirun(ranks, args + ["--logits-out", out_path], env_extra)
    if proc is None:
        return
    out = proc.stdout + proc.stderr
    print("%s: exit %d after %.1f s" % (what, proc.returncode, seconds))
    if proc.returncode == 0 or seconds > 60:
        fail("%s: exit %d after %.1f s (non-zero within 60 s expected): %s" % (what, proc.returncode, seconds, out))
    if "rank %d" % failed not in out:
        fail("%s: the output does not name rank %d: %s" % (what, failed, out))
    for r in survivors:
        lines = [x for x in out.splitlines() if x.startswith("vkf-run: error: rank %d of %d:" % (r, ranks))]
        if not lines or needle not in lines[0]:
            fail("%s: rank %d's error should say %r: %s" % (what, r, needle, out))
    leftovers = [f for f in os.listdir(tmp) if f.startswith("fault")]
    if leftovers:
        fail("%s: left %s behind" % (what, leftovers))


def main():
    try:
        import numpy  # noqa: F401
    except ImportError:
        print("numpy is missing: skipped")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        # Seeded random 6-layer checkpoints (even over 2 and 3 ranks), f16 and q4_0.
        models = {}
        for family, seed in (("bloom", 4), ("mpt", 5)):
            f16, q4 = os.path.join(tmp, family), os.path.join(tmp, family + "-q4_0")
            made, _ = run([MAKE, "--out", f16, "--family", family, "--preset", "tiny", "--layers", "6", "--seed",
                           str(seed)])
            quantized, _ = run([QUANTIZE, "--model", f16, "--to", "q4_0", "--out", q4])
            if made.returncode != 0 or quantized.returncode != 0:
                raise SystemExit("the %s checkpoints: %s %s" % (family, made.stderr, quantized.stderr))
            models[(family, "f16")], models[(family, "q4_0")] = f16, q4
        splits = {(2, "even"): "3,3", (2, "uneven"): "4,2", (3, "even"): "2,2,2", (3, "uneven"): "1,3,2"}
        mpt = models[("mpt", "f16")]

        # The same kernels over the same chunks: the logits agree to rounding (they are equal
        # on lavapipe); fp32 hidden rows pass between the ranks.
        args = ["--model", KJV] + PROMPT[:2] + ["--n-predict", "40", "--quiet", "--ignore-eos", "--rank-timeout", "2"]
        if not FULL:
            # --split auto by each rank's budget: both ranks share lavapipe, so each plans with
            # half its budget; rank 1's 8 MiB (4 MiB for it) holds its fixed part and one layer.
            compare("kjv-bloom f16", KJV, 2, None, tmp, 1e-5, "device_heap=8M,host_heap=1K", [[0, 3], [3, 4]])
            # A model over the ranks' budgets: refused on every rank before loading, with both numbers.
            expect_refusal("over the ranks' budgets", 2, ["--model", KJV] + PROMPT, "device_heap=6M,host_heap=1K",
                           ["split auto: the model needs ", "but they have ", "rank 0 3.00 MiB, rank 1 3.00 MiB",
                            "rank 1: llvmpipe"])
            # The other {family x dtype}: -n 2 / -n 3 and even / uneven alternate. --chunk 4: the
            # 11-token prompt's three chunks follow each other down the ranks (pipelined).
            for family, dtype, ranks, kind, extra in (("bloom", "q4_0", 3, "even", ["--chunk", "4"]),
                                                      ("mpt", "f16", 3, "even", []),
                                                      ("mpt", "q4_0", 2, "uneven", [])):
                compare("%s %s %s" % (family, dtype, kind), models[(family, dtype)], ranks, splits[(ranks, kind)],
                        tmp, 1e-5, extra=extra)
            compare_parallel(tmp)
            # A GGUF file (one file, no config.json): every rank reads its header for the
            # handshake and its layers' tensors from it.
            gguf = os.path.join(tmp, "bloom-q8_0.gguf")
            written, _ = run([QUANTIZE, "--model", models[("bloom", "f16")], "--to", "q8_0", "--format", "gguf",
                              "--out", gguf])
            if written is None or written.returncode != 0:
                fail("vkf-quantize --format gguf: %s" % (written.stderr if written else "timed out"))
            else:
                compare("bloom q8_0 GGUF uneven", gguf, 2, splits[(2, "uneven")], tmp, 1e-5)
                # Another GGUF on rank 1 (q4_0: another header) is refused before loading.
                other = os.path.join(tmp, "bloom-q4_0.gguf")
                run([QUANTIZE, "--model", models[("bloom", "f16")], "--to", "q4_0", "--format", "gguf", "--out", other])
                proc, _ = run([MPIRUN, "--oversubscribe", "-n", "1", RUN, "--model", gguf] + PROMPT +
                              [":", "-n", "1", RUN, "--model", other] + PROMPT)
                if proc is not None and ("the GGUF header) differs: rank 0 has" not in proc.stderr or
                                         proc.returncode == 0):
                    fail("another GGUF on rank 1: exit %d: %s" % (proc.returncode, proc.stderr))
            # The handshake: one rank's --split differs (mpirun's MPMD form).
            proc, _ = run([MPIRUN, "--oversubscribe", "-n", "1", RUN, "--model", KJV, "--split", "3,1"] + PROMPT +
                          [":", "-n", "1", RUN, "--model", KJV, "--split", "2,2"] + PROMPT)
            needle = "the split differs: rank 0 has '3,1'; rank 1 has '2,2'"
            for r in (0, 1):
                if proc is not None and "vkf-run: error: rank %d of 2: the ranks do not agree before loading: %s" % (
                        r, needle) not in proc.stderr:
                    fail("another --split on rank 1: rank %d should name it: %s" % (r, proc.stderr))
            expect_interrupt(tmp)
            # A fault in the middle of generation (VKF_TEST_RANK_FAULT: before rank R's step S).
            expect_fault("rank 2 stopped (SIGSTOP) at step 4", 3, args, {"VKF_TEST_RANK_FAULT": "2:4:stop"}, 2, (0, 1),
                         "rank 2 failed: nothing heard from it", tmp)
        else:
            for (family, dtype), model in sorted(models.items()):
                for (ranks, kind), split in sorted(splits.items()):
                    compare("%s %s %s" % (family, dtype, kind), model, ranks, split, tmp, 1e-5)
            proc, _ = run([MPIRUN, "--oversubscribe", "-n", "1", RUN, "--model", KJV] + PROMPT +
                          [":", "-n", "1", RUN, "--model", mpt] + PROMPT)
            if proc is not None and ("configuration (hash of config.json or the GGUF header) differs: rank 0 has" not in proc.stderr or
                                     proc.returncode == 0):
                fail("another model on rank 1: %s" % proc.stderr)
            expect_fault("rank 1 killed (SIGKILL) at step 4", 3, args, {"VKF_TEST_RANK_FAULT": "1:4:kill"}, 1, (), "",
                         tmp)
    return finish("vkf-run under mpirun: one process's output, the handshake and the faults as expected")


if __name__ == "__main__":
    sys.exit(main())
