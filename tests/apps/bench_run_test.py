#!/usr/bin/env python3
"""CLI test of `vkf-bench run` and `vkf-bench compare`: two small runs, one with the
device's limits and one with forced phone limits and no fp16 arithmetic, written as result
files; checks the schema, the recorded skips (fp16 FMA without float16 arithmetic, the LM
head over --max-memory, the naive attention whose scores exceed a lowered storage buffer
range), then compares the files and checks the table and the SVG plots. A third run times
the start-up suite on the small deep preset and checks its figures.

Sizes are cut far below --quick's (attention at 64 tokens, matmul m = 1 and 8) so the
whole test takes well under a minute on lavapipe with validation on.

usage: bench_run_test.py PATH/TO/vkf-bench
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from cli_checks import command

SMALL = ["run", "--quick", "--lengths", "64", "--decode-kv", "128", "--prefill-m", "8", "--warmup", "0",
         "--reps", "2", "--max-memory", "256M", "--progress", "lines"]


def run(exe, args):
    return subprocess.run(command(exe, args), capture_output=True, text=True, timeout=600)


def results_named(document):
    return {(r["suite"], r["name"]): r for r in document["results"]}


def check_document(path, problems, forced):
    with open(path) as f:
        document = json.load(f)
    for key in ("schema", "schema_version", "vkformer", "created_utc", "command_line", "settings", "device",
                "effective_limits", "quirks", "ceilings", "results"):
        if key not in document:
            problems.append("%s: no %r" % (path, key))
    if document.get("schema") != "vkformer-bench-result" or document.get("schema_version") != 1:
        problems.append("%s: schema %r version %r" % (path, document.get("schema"), document.get("schema_version")))
    if not document.get("created_utc", "").endswith("Z"):
        problems.append("%s: created_utc %r is not UTC ISO 8601" % (path, document.get("created_utc")))
    git = document.get("vkformer", {}).get("git_commit", "")
    if len(git) != 40 and git != "unknown":
        problems.append("%s: git_commit %r" % (path, git))
    results = results_named(document)
    suites = {suite for suite, _ in results}
    if suites != {"ceilings", "attention", "matmul", "block", "model", "startup"}:
        problems.append("%s: suites %s" % (path, sorted(suites)))
    for (suite, name), r in results.items():
        if r["status"] == "failed":
            problems.append("%s: %s %s failed: %s" % (path, suite, name, r["message"]))
        if r["status"] == "ok":
            if len(r["reps_ms"]) != 2 or r["stats_ms"] is None:
                problems.append("%s: %s %s has reps %r" % (path, suite, name, r["reps_ms"]))
            elif not r["stats_ms"]["min"] <= r["stats_ms"]["median"] <= r["stats_ms"]["max"]:
                problems.append("%s: %s %s stats %r" % (path, suite, name, r["stats_ms"]))
            if suite != "ceilings" and not r["plan"]:
                problems.append("%s: %s %s has no plan" % (path, suite, name))
            if suite == "matmul" and r["fma_fraction"] is None:
                problems.append("%s: %s %s is not placed against the FMA ceiling" % (path, suite, name))
    lm_head = [r for (s, n), r in results.items() if s == "matmul" and "lm_head" in n]
    if not lm_head or any(r["status"] != "skipped" or "--max-memory" not in r["message"] for r in lm_head):
        problems.append("%s: the LM head over --max-memory is not skipped: %r" % (path, lm_head))
    block = [r for (s, n), r in results.items() if s == "block"]
    if len(block) != 3 or any(r["status"] != "ok" or not dict(r["extra"]).get("tokens_per_second") for r in block):
        problems.append("%s: the block suite should time a prefill and a decoding step, recorded once and "
                        "re-recorded: %r" % (path, block))
    # Decoding reports what the host and the GPU were given per token; the recorded step
    # is submitted again (no recording once warm), the re-recorded one recorded every time.
    for r in block:
        if r["params"]["mode"] != "decode":
            continue
        extra = dict(r["extra"])
        for key in ("dispatches_per_token", "barriers_per_token", "submissions_per_token",
                    "recordings_per_token"):
            if key not in extra:
                problems.append("%s: %s has no %s" % (path, r["name"], key))
        if "host_ms_per_token" not in extra:
            problems.append("%s: %s has no host_ms_per_token" % (path, r["name"]))
        recorded = r["params"]["step"] == "recorded once"
        if extra.get("submissions_per_token") != 1.0 or (recorded and extra.get("recordings_per_token") != 0.0) \
                or (not recorded and extra.get("recordings_per_token") != 1.0):
            problems.append("%s: %s submissions/recordings per token %r" % (path, r["name"], extra))
    model = [r for (s, n), r in results.items() if s == "model"]
    if not model or any(r["status"] != "skipped" or "--max-memory" not in r["message"] for r in model):
        problems.append("%s: whole BLOOM-560m models over --max-memory are not skipped: %r" % (path, model))
    startup = [r for (s, n), r in results.items() if s == "startup"]
    if not startup or any(r["status"] != "skipped" or "--max-memory" not in r["message"] for r in startup):
        problems.append("%s: BLOOM-560m start-up over --max-memory is not skipped: %r" % (path, startup))
    fp16 = results.get(("ceilings", "fp16 fma"))
    if forced:
        if not fp16 or fp16["status"] != "skipped" or "float16" not in fp16["message"]:
            problems.append("%s: fp16 FMA with no_fp16_arithmetic: %r" % (path, fp16))
        if document["ceilings"]["fp16_gflops"] is not None:
            problems.append("%s: an fp16 ceiling without fp16 arithmetic" % path)
        f32 = [r for (s, n), r in results.items() if s == "attention" and " f32 " in n]
        if not f32 or any(r["status"] != "skipped" or "maxStorageBufferRange" not in r["message"] for r in f32):
            problems.append("%s: f32 attention over the storage buffer range not skipped: %r" % (path, f32))
        naive = [r for (s, n), r in results.items() if s == "attention" and "naive" in n]
        if not naive or any(r["status"] != "skipped" or "maxStorageBufferRange" not in r["message"] for r in naive):
            problems.append("%s: naive attention over the storage buffer range not skipped: %r" % (path, naive))
        if document["settings"]["limit_overrides"] == "none" or not document["effective_limits"]["forced"]:
            problems.append("%s: forced limits not recorded" % path)
    return document


STARTUP_KEYS = ("pipelines", "pipelines_at_first_token", "create_ms_cold", "create_ms_warm", "cache_hits_warm",
                "load_ms_cold", "first_token_ms_cold", "first_token_ms_warm", "second_token_ms_cold",
                "second_token_ms_warm", "token_ms_steady", "prepare_ms_cold", "prepare_ms_warm", "prepare_threads")


def check_startup(exe, tmp, problems):
    """The start-up suite on the small deep preset: pipelines counted, cold and warm figures."""
    path = os.path.join(tmp, "startup.json")
    proc = run(exe, ["run", "--suites", "startup", "--presets", "bloom-24x64", "--prefill-m", "5", "--weights",
                     "f32", "--progress", "none", "--out", path])
    if proc.returncode != 0:
        problems.append("run --suites startup: exit code %d\n%s%s" % (proc.returncode, proc.stdout, proc.stderr))
        return
    with open(path) as f:
        results = json.load(f)["results"]
    if len(results) != 1 or results[0]["status"] != "ok":
        problems.append("startup: one ok result expected: %r" % results)
        return
    r = results[0]
    extra = dict(r["extra"])
    missing = [k for k in STARTUP_KEYS if k not in extra]
    if missing:
        problems.append("startup: no %s in %r" % (missing, extra))
        return
    # 24 layers share their pipelines: a forward pass needs tens, not one per layer.
    if not 5 <= extra["pipelines_at_first_token"] <= extra["pipelines"] <= 60:
        problems.append("startup: pipeline counts %r" % extra)
    # Prepared before the first token: the first token and later ones make none.
    if extra["pipelines_at_first_token"] != extra["pipelines"] or extra["prepare_threads"] < 1:
        problems.append("startup: pipelines made after the preparation %r" % extra)
    if not (extra["prepare_ms_cold"] > 0 and extra["prepare_ms_warm"] > 0):
        problems.append("startup: preparation times %r" % extra)
    if not (extra["first_token_ms_cold"] > 0 and extra["first_token_ms_warm"] > 0 and extra["create_ms_cold"] > 0):
        problems.append("startup: times %r" % extra)
    if extra["cache_hits_warm"] > extra["pipelines"]:
        problems.append("startup: more cache hits than pipelines %r" % extra)
    if "bloom-24x64 start-up f32 prompt 5" not in r["name"] or "pipelines" not in r["plan"]:
        problems.append("startup: name %r plan %r" % (r["name"], r["plan"]))


def check_batch(exe, tmp, problems):
    """--batch 1,2 on the small deep preset: B sequences decoding together, their figures."""
    path = os.path.join(tmp, "batch.json")
    proc = run(exe, ["run", "--suites", "model", "--presets", "bloom-24x64", "--prefill-m", "5", "--weights", "f32",
                     "--batch", "1,2", "--warmup", "0", "--reps", "2", "--progress", "none", "--out", path])
    if proc.returncode != 0:
        problems.append("run --batch 1,2: exit code %d\n%s%s" % (proc.returncode, proc.stdout, proc.stderr))
        return
    with open(path) as f:
        results = json.load(f)["results"]
    batched = [r for r in results if r["params"].get("step") == "batch"]
    if len(results) != 5 or [r["params"].get("batch") for r in batched] != [1, 2]:
        problems.append("--batch 1,2: expected the 3 single-sequence cases and batches 1 and 2: %r" %
                        [r["name"] for r in results])
        return
    for r in results:
        if r["status"] != "ok":
            problems.append("--batch 1,2: %s is %s: %s" % (r["name"], r["status"], r["message"]))
    for r in batched:
        b = r["params"]["batch"]
        extra = dict(r["extra"])
        missing = [k for k in ("batch", "tokens_per_second", "per_sequence_tokens_per_second", "bytes_read_per_token",
                               "kv_blocks_used", "kv_blocks_total", "recordings_per_step", "submissions_per_step")
                   if k not in extra]
        if missing or r["status"] != "ok":
            problems.append("%s: no %s in %r" % (r["name"], missing, extra))
            continue
        if "decode batch %d after 5 tokens f32" % b not in r["name"] or r["params"]["tokens"] != b:
            problems.append("%s: name or params %r" % (r["name"], r["params"]))
        if abs(extra["per_sequence_tokens_per_second"] * b - extra["tokens_per_second"]) > 1e-6 * extra[
                "tokens_per_second"] or abs(1000.0 * b / r["stats_ms"]["median"] - extra["tokens_per_second"]) > 1e-6 * \
                extra["tokens_per_second"]:
            problems.append("%s: %r tokens/s, %r per sequence, median %r ms" % (
                r["name"], extra["tokens_per_second"], extra["per_sequence_tokens_per_second"], r["stats_ms"]["median"]))
        if extra["bytes_read_per_token"] * b != extra["bytes_read_per_pass"]:
            problems.append("%s: %r bytes per token of %r per pass" % (r["name"], extra["bytes_read_per_token"],
                                                                       extra["bytes_read_per_pass"]))
        # 5 prompt tokens, an untimed step and 2 timed ones: one 16-token block per sequence.
        if extra["kv_blocks_used"] != b or extra["kv_blocks_total"] != b:
            problems.append("%s: KV blocks %r of %r, expected %d" % (r["name"], extra["kv_blocks_used"],
                                                                     extra["kv_blocks_total"], b))
        if extra["recordings_per_step"] != 0.0 or extra["submissions_per_step"] != 1.0:
            problems.append("%s: %r recordings and %r submissions per step" % (
                r["name"], extra["recordings_per_step"], extra["submissions_per_step"]))
    if "per sequence)" not in proc.stdout:
        problems.append("--batch: the table has no per-sequence tokens/s:\n%s" % proc.stdout)


def check_window_decode(exe, tmp, problems):
    """--modes decode --window 8 after 40 tokens: only decoding cases, each named and marked by
    its window; the batched one holds its ring of blocks, not the 3 blocks 40 tokens fill, and
    the arithmetic counts the window's keys, not the context's."""
    path = os.path.join(tmp, "window.json")
    proc = run(exe, ["run", "--suites", "model", "--presets", "bloom-24x64", "--prefill-m", "40", "--weights", "f32",
                     "--window", "8", "--modes", "decode", "--warmup", "0", "--reps", "1", "--progress", "none",
                     "--out", path])
    if proc.returncode != 0:
        problems.append("run --modes decode --window 8: exit code %d\n%s%s" % (proc.returncode, proc.stdout,
                                                                               proc.stderr))
        return
    with open(path) as f:
        results = json.load(f)["results"]
    if [r["params"]["mode"] for r in results] != ["decode"] * 3 or \
            any(r["params"].get("window") != 8 or not r["name"].endswith("window 8") for r in results):
        problems.append("--modes decode --window 8: %r" % [(r["name"], r["params"]) for r in results])
        return
    single = [r for r in results if r["params"]["step"] == "recorded once"][0]
    batched = [r for r in results if r["params"]["step"] == "batch"][0]
    # Both decode a token that sees 9 keys (the window and itself), so their arithmetic is the
    # same; counted over the context, the batched one (after 41 tokens) would see one key more.
    if single.get("flops") != batched.get("flops"):
        problems.append("--window 8: %r flops after 40 tokens, %r after 41" % (single.get("flops"),
                                                                           batched.get("flops")))
    extra = dict(batched["extra"])
    # Ring: ceil((8 + chunk 40) / 16) + 1 = 4 blocks at most; 40 + 1 + 1 tokens fill 3: the ring
    # bound shows only in blocks total, which is the pool the case sized from it.
    if extra.get("kv_blocks_total", 99) > 4 or extra.get("kv_blocks_used", 99) > extra.get("kv_blocks_total", 0):
        problems.append("--window 8 batch: KV blocks %r of %r" % (extra.get("kv_blocks_used"),
                                                                  extra.get("kv_blocks_total")))
    for r in results:
        if r["status"] != "ok":
            problems.append("--window 8: %s is %s: %s" % (r["name"], r["status"], r["message"]))


def check_kv_also(exe, tmp, problems):
    """--kv f16 --kv-also q8_0: the block suite times each decoding case with both K/V
    storages, the q8_0 one right after its f16 twin (one run's comparison, docs/QUANTIZATION.md)."""
    path = os.path.join(tmp, "kv_also.json")
    proc = run(exe, ["run", "--suites", "block", "--presets", "bloom-24x64", "--prefill-m", "40", "--weights", "f32",
                     "--kv", "f16", "--kv-also", "q8_0", "--modes", "decode", "--warmup", "0", "--reps", "1",
                     "--progress", "none", "--out", path])
    if proc.returncode != 0:
        problems.append("run --kv-also q8_0: exit code %d\n%s%s" % (proc.returncode, proc.stdout, proc.stderr))
        return
    with open(path) as f:
        results = json.load(f)["results"]
    got = [(r["params"]["kv"], r["params"]["step"], r["status"]) for r in results]
    want = [("f16", "recorded once", "ok"), ("q8_0", "recorded once", "ok"), ("f16", "re-recorded", "ok"),
            ("q8_0", "re-recorded", "ok")]
    if got != want or not all(" kv %s" % kv in r["name"] for (kv, _, _), r in zip(want, results)):
        problems.append("--kv f16 --kv-also q8_0: %r" % [(r["name"], r["status"], r.get("message")) for r in results])


def check_prefix(exe, tmp, problems):
    """--suites prefix (issue 42): a 40-token prompt cold, then with one more token: the warm
    one takes the two whole 16-token blocks from the prefix cache (the case fails itself when
    it takes another count), and the figures are there. Times are reported, never judged."""
    path = os.path.join(tmp, "prefix.json")
    proc = run(exe, ["run", "--suites", "prefix", "--presets", "bloom-24x64", "--prefill-m", "40", "--weights", "f32",
                     "--warmup", "0", "--reps", "2", "--progress", "none", "--out", path])
    if proc.returncode != 0:
        problems.append("run --suites prefix: exit code %d\n%s%s" % (proc.returncode, proc.stdout, proc.stderr))
        return
    with open(path) as f:
        results = json.load(f)["results"]
    if len(results) != 1 or results[0]["status"] != "ok":
        problems.append("--suites prefix: %r" % [(r["name"], r["status"], r.get("message")) for r in results])
        return
    extra = dict(results[0]["extra"])
    if extra.get("cached_tokens") != 32 or abs(extra.get("cached_fraction", 0) - 32 / 41) > 1e-12 or \
            not extra.get("cold_ms", 0) > 0 or not extra.get("warm_over_cold", 0) > 0:
        problems.append("--suites prefix: %s %r" % (results[0]["name"], extra))


def check_split(exe, tmp, problems):
    """The split suite: vkf-run on one device, over 2 and 3 Contexts, under mpirun -n 1..3."""
    if os.environ.get("VKF_TEST_EMULATOR"):
        return  # it starts vkf-run and mpirun itself, without the emulator
    path = os.path.join(tmp, "split.json")
    proc = run(exe, ["run", "--suites", "split", "--presets", "bloom-24x64", "--prefill-m", "5", "--quick",
                     "--progress", "none", "--out", path])
    if proc.returncode != 0:
        problems.append("run --suites split: exit code %d\n%s%s" % (proc.returncode, proc.stdout, proc.stderr))
        return
    with open(path) as f:
        results = json.load(f)["results"]
    seen = {}
    for r in results:
        seen[(r["params"]["mode"], r["params"]["stages"])] = r
    expected = [("one", 1), ("devices", 2), ("devices", 3), ("ranks", 1), ("ranks", 2), ("ranks", 3)]
    if sorted(seen) != sorted(expected):
        problems.append("split: cases %r" % sorted(seen))
        return
    for key, r in seen.items():
        if key[0] == "ranks" and r["status"] == "skipped" and shutil.which("mpirun") is None:
            continue
        if r["status"] != "ok" or not r["reps_ms"][0] > 0:
            problems.append("split %r: %s %s" % (key, r["status"], r.get("message")))
            continue
        extra = r["extra"]
        if key[1] > 1 and not (extra.get("transfer_ms_per_token", -1) >= 0 and 0 <= extra.get("transfer_share", -1) < 1):
            problems.append("split %r: no hand-off figures in %r" % (key, extra))
        if key != ("one", 1) and not extra.get("ms_per_token_vs_one_device", 0) > 0:
            problems.append("split %r: no ratio to one device in %r" % (key, extra))


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    exe = sys.argv[1]
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        a = os.path.join(tmp, "default.json")
        b = os.path.join(tmp, "phone.json")
        # storage_buffer_range=128K: the naive scores (16 heads x 64 x 64 floats, 256 KiB) and the f32
        # tensors (64 tokens x 16 heads x 64 x 4 bytes, 256 KiB) exceed it, and are skipped.
        for path, extra in ((a, []), (b, ["--limits", "phone,no_fp16_arithmetic,storage_buffer_range=128K"])):
            proc = run(exe, SMALL + extra + ["--out", path])
            if proc.returncode != 0:
                problems.append("run %s: exit code %d\nstdout:\n%s\nstderr:\n%s" % (" ".join(extra), proc.returncode,
                                                                                  proc.stdout, proc.stderr))
                continue
            if "skipped" not in proc.stdout:
                problems.append("run %s: no skip shown in the table:\n%s" % (" ".join(extra), proc.stdout))
            check_document(path, problems, forced=bool(extra))
        check_startup(exe, tmp, problems)
        check_batch(exe, tmp, problems)
        check_window_decode(exe, tmp, problems)
        check_kv_also(exe, tmp, problems)
        check_prefix(exe, tmp, problems)
        check_split(exe, tmp, problems)
        if not problems:
            plots = os.path.join(tmp, "plots")
            proc = run(exe, ["compare", a, b, "--out-dir", plots])
            if proc.returncode != 0:
                problems.append("compare: exit code %d\n%s%s" % (proc.returncode, proc.stdout, proc.stderr))
            else:
                for needle in ("[1] default", "[2] phone", "x", "skipped", "ceilings:", "attention:", "matmul:"):
                    if needle not in proc.stdout:
                        problems.append("compare: %r not in the table:\n%s" % (needle, proc.stdout))
                for suite in ("ceilings", "attention", "matmul"):
                    svg = os.path.join(plots, "vkf-bench-%s.svg" % suite)
                    if not os.path.isfile(svg) or os.path.getsize(svg) == 0:
                        problems.append("compare: no %s" % svg)
                        continue
                    with open(svg) as f:
                        text = f.read()
                    if "<svg" not in text or not text.rstrip().endswith("</svg>"):
                        problems.append("%s is not an SVG document" % svg)
                    try:
                        ET.fromstring(text)
                    except ET.ParseError as e:
                        problems.append("%s is not well-formed XML: %s" % (svg, e))
            for args, code in ((["compare"], 2), (["compare", os.path.join(tmp, "missing.json")], 1),
                               (["run", "--suites", "nope"], 2), (["compare", a, "--labels", "x,y"], 2),
                               (["run", "--batch", "0"], 2), (["run", "--batch", "1,x"], 2),
                               (["run", "--kv-also", "q5"], 2)):
                proc = run(exe, args)
                if proc.returncode != code:
                    problems.append("%s: exit code %d, expected %d\n%s" % (" ".join(args), proc.returncode, code,
                                                                           proc.stderr))
    for problem in problems:
        print("FAIL: " + problem)
    if not problems:
        print("ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
