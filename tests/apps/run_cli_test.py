#!/usr/bin/env python3
"""End-to-end test of vkf-run on small random checkpoints written by vkf-make-checkpoint:
greedy generation with --check and --json, the logits file (shape, and each step's argmax is
the generated id), seeded sampling (same seed, same ids), a prompt from a file, sharded and
MPT checkpoints, fp32 and fp16 KV caches (--kv), a forced small device-local heap (weights in
host-visible memory, reported in --json), and the errors for bad options, bad ids, missing models
and a model over a forced memory budget. When
tests/reference/model_numpy.py is given, the logits are also compared with that independent NumPy
implementation of the two model families.

usage: run_cli_test.py PATH/TO/vkf-run PATH/TO/vkf-make-checkpoint [PATH/TO/model_numpy.py]
"""

import importlib.util
import json
import os
import sys
import tempfile

from cli_checks import fail, finish, run

try:
    import numpy as np
except ImportError:
    print("skipped: this python3 has no numpy (Debian: apt-get install python3-numpy)")
    sys.exit(77)

RUN, MAKE = sys.argv[1], sys.argv[2]
NUMPY_MODEL = sys.argv[3] if len(sys.argv) > 3 else None


def make_model(path, family, dtype, heads, hidden, extra=()):
    proc = run(MAKE, ["--out", path, "--family", family, "--layers", "2", "--hidden", str(hidden), "--heads",
                      str(heads), "--vocab", "301", "--dtype", dtype, "--seed", "3"] + list(extra))
    if proc.returncode != 0:
        raise SystemExit("vkf-make-checkpoint failed: " + proc.stderr)


def run_json(model, args):
    proc = run(RUN, ["--model", model, "--json", "--quiet"] + args)
    if proc.returncode != 0:
        fail("vkf-run %s exited %d: %s" % (" ".join(args), proc.returncode, proc.stderr))
        return None
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        fail("vkf-run --json printed invalid JSON (%s): %r" % (e, proc.stdout[:300]))
        return None


def load_numpy_model():
    if not NUMPY_MODEL:
        return None
    spec = importlib.util.spec_from_file_location("model_numpy", NUMPY_MODEL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Relative logit error bounds: an fp32 KV cache leaves only fp32 arithmetic against the
# references' double; an fp16 cache rounds K and V, within the fp16 storage bound of
# docs/DESIGN.md (measured 1e-5 .. 2e-4 on the small models of tests/model).
BOUNDS = {"f32": 1e-4, "f16": 2e-3}


def check_greedy(model, name, prompt, n_predict, numpy_model, kv):
    bound = BOUNDS[kv]
    logits_path = os.path.join(os.path.dirname(model), name + "-logits.npy")
    result = run_json(model, ["--prompt-ids", ",".join(map(str, prompt)), "--n-predict", str(n_predict), "--check",
                              "--profile", "--logits-out", logits_path, "--kv", kv])
    if result is None:
        return None
    if result.get("kv") != kv:
        fail("%s: --json says kv %r, expected %r" % (name, result.get("kv"), kv))
    ids = result.get("generated_ids", [])
    if len(ids) != n_predict:
        fail("%s: %d generated ids, expected %d" % (name, len(ids), n_predict))
        return result
    error = result.get("check", {}).get("max_rel_logit_error")
    if error is None or not error < bound:
        fail("%s: --check error %r, expected < %g" % (name, error, bound))
    for key in ("prefill_tokens_per_second", "decode_tokens_per_second"):
        if not result.get(key, 0) > 0:
            fail("%s: %s is %r" % (name, key, result.get(key)))
    if "matmul" not in result.get("profile", {}):
        fail("%s: --profile has no matmul entry: %r" % (name, result.get("profile")))
    logits = np.load(logits_path)
    if logits.shape != (n_predict, 301) or logits.dtype != np.float32:
        fail("%s: logits file is %s %s, expected (%d, 301) float32" % (name, logits.shape, logits.dtype, n_predict))
        return result
    if list(np.argmax(logits, axis=1)) != ids:
        fail("%s: greedy ids %s are not the argmax of the logits %s" % (name, ids, list(np.argmax(logits, axis=1))))
    if numpy_model is not None:
        sequence = list(prompt) + ids[:-1]
        reference = numpy_model.logits(model, sequence)[len(prompt) - 1:]
        worst = max(np.max(np.abs(logits[s] - reference[s])) / np.max(np.abs(reference[s]))
                    for s in range(n_predict))
        print("%s: largest relative logit error against NumPy %.3g" % (name, worst))
        if not worst < bound:
            fail("%s: logits differ from the NumPy model by %.3g" % (name, worst))
    print("%s: ok, ids %s, check error %.3g" % (name, ids, error if error is not None else float("nan")))
    return result


def check_prepare(result):
    """The pipelines were made before the prompt ran (Session::prepare), so the prefill's time is
    its own: counts only, never times."""
    prep = result.get("prepare")
    if not isinstance(prep, dict):
        fail("--json has no prepare object: %r" % result)
        return
    if not prep["pipelines"] > 0 or prep["created"] != prep["pipelines"]:
        fail("a fresh process should make every pipeline it prepares: %r" % prep)
    if not 1 <= prep["threads"] <= prep["created"] or not 0 <= prep["cache_hits"] <= prep["created"]:
        fail("inconsistent preparation counts: %r" % prep)
    if not 0 <= prep["create_seconds"] <= prep["seconds"] or not 0 <= prep["warm_seconds"] <= prep["seconds"]:
        fail("inconsistent preparation times: %r" % prep)
    if result["model"]["load_seconds"] < 0 or result["prefill_seconds"] < 0:
        fail("negative load or prefill time: %r" % result)


def main():
    numpy_model = load_numpy_model()
    with tempfile.TemporaryDirectory() as tmp:
        bloom = os.path.join(tmp, "bloom")
        make_model(bloom, "bloom", "f32", 4, 128)
        mpt = os.path.join(tmp, "mpt")
        make_model(mpt, "mpt", "f16", 6, 192, ["--clip-qkv", "0.3", "--bias", "--shards", "3"])

        prompt = [5, 17, 300, 0, 42, 7, 99]
        bloom_kv32 = check_greedy(bloom, "bloom f32", prompt, 6, numpy_model, "f32")
        check_greedy(mpt, "mpt f16 sharded clip_qkv", prompt, 5, numpy_model, "f32")
        bloom_kv16 = check_greedy(bloom, "bloom f32 kv f16", prompt, 6, numpy_model, "f16")
        check_greedy(mpt, "mpt f16 sharded clip_qkv kv f16", prompt, 5, numpy_model, "f16")
        if bloom_kv32 and bloom_kv16:
            # 2 layers x 12 tokens (one 16-token block) x hidden 128 x (K and V) x 2 bytes saved.
            saved = bloom_kv32["session_device_bytes"] - bloom_kv16["session_device_bytes"]
            if saved != 2 * 16 * 128 * 2 * 2:
                fail("--kv f16 saves %d bytes of the session, expected %d" % (saved, 2 * 16 * 128 * 2 * 2))
        default = run_json(bloom, ["--prompt-ids", "1,2", "--n-predict", "2"])
        if default:
            check_prepare(default)
        if default and default.get("kv") != "f16":
            fail("the default KV cache is %r, expected f16" % default.get("kv"))
        if default and (default.get("host_visible_fallback_bytes") != 0 or default.get("memory_note") is not None):
            fail("nothing should fall back to host-visible memory here: %r, %r" %
                 (default.get("host_visible_fallback_bytes"), default.get("memory_note")))

        # A forced 1 MiB device-local heap (the weights are 1.66 MiB): the rest goes to host-visible
        # memory, --json says so, and the greedy ids and the check are as before.
        small_heap = run_json(bloom, ["--prompt-ids", ",".join(map(str, prompt)), "--n-predict", "6", "--check",
                                      "--kv", "f32", "--limits", "device_heap=1M"])
        if small_heap and bloom_kv32:
            note = small_heap.get("memory_note") or ""
            if not small_heap.get("host_visible_fallback_bytes", 0) > 0 or "device_heap=1048576" not in note:
                fail("device_heap=1M: fallback bytes %r, note %r" % (small_heap.get("host_visible_fallback_bytes"), note))
            if small_heap["generated_ids"] != bloom_kv32["generated_ids"]:
                fail("device_heap=1M gave ids %s, expected %s" % (small_heap["generated_ids"],
                                                                  bloom_kv32["generated_ids"]))
            error = small_heap.get("check", {}).get("max_rel_logit_error")
            if error is None or not error < BOUNDS["f32"]:
                fail("device_heap=1M: --check error %r" % error)

        # --unfused (LayerNorm, Q repack and K/V append as passes of their own, every step
        # recorded anew): the same greedy ids, and as close to the reference.
        unfused = run_json(bloom, ["--prompt-ids", ",".join(map(str, prompt)), "--n-predict", "6", "--check",
                                   "--kv", "f32", "--unfused"])
        if unfused and bloom_kv32:
            if unfused["generated_ids"] != bloom_kv32["generated_ids"]:
                fail("--unfused gave ids %s, expected %s" % (unfused["generated_ids"], bloom_kv32["generated_ids"]))
            error = unfused.get("check", {}).get("max_rel_logit_error")
            if error is None or not error < BOUNDS["f32"]:
                fail("--unfused: --check error %r" % error)

        # Seeded sampling: reproducible, and the seed matters.
        sampling = ["--prompt-ids", "1,2,3", "--n-predict", "12", "--temp", "1.5", "--top-k", "50", "--top-p", "0.95"]
        a = run_json(bloom, sampling + ["--seed", "5"])
        b = run_json(bloom, sampling + ["--seed", "5"])
        c = run_json(bloom, sampling + ["--seed", "6"])
        if a and b and c:
            if a["generated_ids"] != b["generated_ids"]:
                fail("the same seed gave %s and %s" % (a["generated_ids"], b["generated_ids"]))
            if a["generated_ids"] == c["generated_ids"]:
                fail("seeds 5 and 6 gave the same 12 sampled ids %s" % a["generated_ids"])
            if not all(0 <= i < 301 for i in a["generated_ids"] + c["generated_ids"]):
                fail("sampled ids out of the vocabulary")

        # A prompt from a file gives what the same ids on the command line give.
        ids_file = os.path.join(tmp, "prompt.txt")
        with open(ids_file, "w") as f:
            f.write("5 17\n300, 0\n")
        from_file = run_json(bloom, ["--prompt-ids-file", ids_file, "--n-predict", "3"])
        inline = run_json(bloom, ["--prompt-ids", "5,17,300,0", "--n-predict", "3"])
        if from_file and inline and from_file["generated_ids"] != inline["generated_ids"]:
            fail("--prompt-ids-file gave %s, --prompt-ids %s" % (from_file["generated_ids"], inline["generated_ids"]))

        # --ctx bounds every run: without a window a full cache ends generation (stop reason
        # "length", as --n-predict's) with a message; with --window the run goes past --ctx in
        # the same few blocks, its logits checked against the windowed reference.
        full = run_json(bloom, ["--prompt-ids", "1,2,3", "--n-predict", "50", "--ctx", "20"])
        if full and (len(full["generated_ids"]) != 18 or full.get("stop_reason") != "length"):
            fail("--ctx 20 without a window: %d ids, stop_reason %r; expected 18 and 'length'" %
                 (len(full["generated_ids"]), full.get("stop_reason")))
        text = run(RUN, ["--model", bloom, "--prompt-ids", "1,2,3", "--n-predict", "50", "--ctx", "20", "--quiet"])
        if text.returncode != 0 or "KV cache is full" not in text.stdout:
            fail("--ctx 20 text output: exit %d, %r" % (text.returncode, text.stdout[-300:]))
        windowed = {}
        for n in (40, 120):
            windowed[n] = run_json(bloom, ["--prompt-ids", "1,2,3", "--n-predict", str(n), "--ctx", "48",
                                           "--window", "16", "--kv", "f32", "--check"])
        if windowed[40] and windowed[120]:
            w = windowed[120]
            if len(w["generated_ids"]) != 120 or w.get("stop_reason") != "length" or w.get("window") != 16:
                fail("--window 16 --ctx 48: %d ids, stop_reason %r, window %r" %
                     (len(w["generated_ids"]), w.get("stop_reason"), w.get("window")))
            error = w.get("check", {}).get("max_rel_logit_error")
            if error is None or not error < BOUNDS["f32"]:
                fail("--window 16 --ctx 48: --check error %r" % error)
            # 16 keys before each token and 16-row steps in 16-token blocks: a ring of 3 blocks.
            if not 0 < w.get("kv_blocks_in_use", 0) <= 3 or \
                    w["session_device_bytes"] != windowed[40]["session_device_bytes"]:
                fail("--window 16: %r blocks in use, %d session bytes after 120 tokens, %d after 40" %
                     (w.get("kv_blocks_in_use"), w["session_device_bytes"], windowed[40]["session_device_bytes"]))
        proc = run(RUN, ["--model", bloom, "--prompt-ids", "1", "--window", "-1", "--quiet"])
        if proc.returncode != 2 or "--window" not in proc.stderr:
            fail("--window -1: exit %d, %r" % (proc.returncode, proc.stderr))

        # Text output names the throughput.
        text = run(RUN, ["--model", bloom, "--prompt-ids", "1,2", "--n-predict", "2", "--quiet"])
        if text.returncode != 0 or "tokens/s" not in text.stdout or not text.stdout.startswith("generated:"):
            fail("text output: exit %d, %r" % (text.returncode, text.stdout))

        # Errors: usage errors exit 2, run-time errors 1, each naming the problem.
        for args, code, needle in [
            (["--prompt-ids", "1"], 2, "--model"),
            (["--model", bloom], 2, "prompt"),
            (["--model", bloom, "--prompt-ids", "1,x"], 2, "'x'"),
            (["--model", bloom, "--prompt-ids", "1", "--top-p", "1.5"], 2, "top_p"),
            (["--model", bloom, "--prompt-ids", "1", "--min-p", "2"], 2, "min_p"),
            (["--model", bloom, "--prompt-ids", "1", "--logit-bias", "5"], 2, "ID=BIAS"),
            (["--model", bloom, "--prompt-ids", "1", "--logit-bias", "999=1"], 1, "outside the vocabulary"),
            (["--model", bloom, "--prompt-ids", "1", "--n-predict", "0"], 2, "--n-predict"),
            (["--model", bloom, "--prompt-ids", "1", "--kv", "bf16"], 2, "--kv"),
            (["--model", bloom, "--prompt-ids", "1,301"], 1, "301"),
            (["--model", os.path.join(tmp, "nowhere"), "--prompt-ids", "1"], 1, "nowhere"),
            # Refused before loading: 1.7 MiB needed, 1 MiB forced.
            (["--model", bloom, "--prompt-ids", "1", "--limits", "device_heap=512K,host_heap=512K"], 1,
             "but only 1 MiB (1048576) are available"),
        ]:
            proc = run(RUN, args + ["--quiet"])
            if proc.returncode != code or needle not in proc.stderr:
                fail("vkf-run %s: exit %d (expected %d), stderr %r should name %r" %
                     (" ".join(args), proc.returncode, code, proc.stderr, needle))
    return finish("all vkf-run checks passed")


if __name__ == "__main__":
    sys.exit(main())
