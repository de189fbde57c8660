#!/usr/bin/env python3
"""CLI test of `vkf-bench llama` on the shipped kjv-bloom model: its rows against llama-bench's
own output of the same model shape and tests (tests/apps/data/llama_bench/kjv-bloom-cpu.*:
llama-bench from node-llama-cpp 3.22.1's llama.cpp, run on a GGUF of this model made with the
gguf-py it carries; see that folder's README): the same keys in the same order with the same
JSON types, the same CSV header and markdown columns, the same test names; vkformer's fields
(the correctness check, batched = alone); a failed check marks the row failed; sustained mode
keeps one sample per iteration.

usage: bench_llama_test.py PATH/TO/vkf-bench MODEL_DIR DATA_DIR
"""

import csv
import io
import json
import os
import sys
import tempfile

from cli_checks import fail, failures, run

EXE, MODEL, DATA = sys.argv[1:4]
SMALL = ["llama", "-m", MODEL, "--check-tokens", "6", "--bandwidth", "10"]


def type_name(value):
    return {bool: "bool", int: "int", float: "float", str: "string"}.get(type(value), type(value).__name__)


def compare_json_rows(rows, reference):
    ref = reference[0]
    ref_keys = list(ref)
    for row in rows:
        keys = list(row)
        if keys[:len(ref_keys)] != ref_keys:
            fail("keys %s are not llama-bench's %s" % (keys[:len(ref_keys)], ref_keys))
            return
        for key in ref_keys:
            # llama-bench writes an integral avg_ts as a whole number only by chance: compare numbers as numbers.
            a, b = type_name(row[key]), type_name(ref[key])
            if a != b and not {a, b} <= {"int", "float"}:
                fail("%s is a %s, llama-bench's a %s" % (key, a, b))
        extra = keys[len(ref_keys):]
        if not all(k.startswith("vkf_") for k in extra):
            fail("vkformer's keys %s do not all start with vkf_" % extra)


def main():
    with open(os.path.join(DATA, "kjv-bloom-cpu.json")) as f:
        reference = json.load(f)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        # The tests of the reference output, at two depths, alone and two sequences together.
        proc = run(EXE, SMALL + ["-p", "16", "-n", "4", "--pg", "8,2", "-d", "0,8", "-r", "2", "--sequences", "1,2",
                                 "-o", "json", "--out", out])
        if proc.returncode != 0:
            fail("llama -o json exited %d: %s" % (proc.returncode, proc.stderr))
            return
        with open(out) as f:
            rows = json.load(f)
        compare_json_rows(rows, reference)
        labels = [(r["n_prompt"], r["n_gen"], r["n_depth"], r["vkf_sequences"]) for r in rows]
        expected = [(p, n, d, b) for b in (1, 2) for d in (0, 8) for p, n in ((16, 0), (0, 4), (8, 2))]
        if labels != expected:
            fail("tests %s, expected %s" % (labels, expected))
        for r in rows:
            if len(r["samples_ns"]) != 2 or len(r["samples_ts"]) != 2:
                fail("%s: samples %s" % (labels, r["samples_ns"]))
            tokens = r["vkf_sequences"] * (r["n_prompt"] + r["n_gen"])
            for ns, ts in zip(r["samples_ns"], r["samples_ts"]):
                if abs(ts - tokens * 1e9 / ns) > 1e-6 * ts:
                    fail("samples_ts %s is not tokens over samples_ns %s" % (ts, ns))
            if r["vkf_status"] != "ok" or not 0 <= r["vkf_check_max_rel"] < 1e-3:
                fail("row %s: status %s, check %s: %s" % (r["n_prompt"], r["vkf_status"], r["vkf_check_max_rel"],
                                                          r["vkf_message"]))
            batched = r["vkf_batched_max_rel"]
            if (r["vkf_sequences"] > 1) != (batched is not None) or (batched is not None and batched > 1e-3):
                fail("sequences %d: batched = alone figure %r" % (r["vkf_sequences"], batched))
            if r["backends"] != "vkformer-Vulkan" or r["model_n_params"] != reference[0]["model_n_params"]:
                fail("backends %r, model_n_params %r (llama.cpp counts %r)" % (
                    r["backends"], r["model_n_params"], reference[0]["model_n_params"]))
            tg = r["n_prompt"] == 0
            if tg != (r["vkf_bandwidth_fraction"] is not None):
                fail("bandwidth fraction %r on %s" % (r["vkf_bandwidth_fraction"], labels))
            if not r["vkf_effective_limits"] or not r["vkf_driver_name"]:
                fail("no effective limits or driver name")

        # The text forms' headers and columns, on one quick test.
        quick = SMALL + ["-p", "8", "-n", "0", "-r", "1"]
        proc = run(EXE, quick + ["-o", "csv"])
        with open(os.path.join(DATA, "kjv-bloom-cpu.csv")) as f:
            ref_header = f.readline().strip().split(",")
        table = list(csv.reader(io.StringIO(proc.stdout)))
        if proc.returncode != 0 or table[0][:len(ref_header)] != ref_header or len(table) != 2:
            fail("csv header %s, llama-bench's %s (rc %d)" % (table[:1], ref_header, proc.returncode))
        proc = run(EXE, quick + ["-o", "jsonl"])
        lines = proc.stdout.splitlines()
        if proc.returncode != 0 or len(lines) != 1:
            fail("jsonl: %d lines, rc %d" % (len(lines), proc.returncode))
        else:
            compare_json_rows([json.loads(lines[0])], reference)
        proc = run(EXE, quick + ["-o", "md"])
        with open(os.path.join(DATA, "kjv-bloom-cpu.md")) as f:
            ref_columns = [c.strip() for c in f.readline().strip().strip("|").split("|")]
        columns = [c.strip() for c in proc.stdout.splitlines()[0].strip().strip("|").split("|")]
        # llama-bench shows threads for a CPU backend where a GPU's shows ngl.
        expected = [c if c != "threads" else "ngl" for c in ref_columns]
        if columns[:len(expected)] != expected or "| pp8 |" not in proc.stdout.replace("  ", ""):
            fail("md columns %s, llama-bench's %s:\n%s" % (columns, expected, proc.stdout))

        # A check over the tolerance marks the row failed, and the exit status is 1.
        proc = run(EXE, quick + ["-o", "json", "--check-tolerance", "1e-12"])
        if proc.returncode != 1 or json.loads(proc.stdout)[0]["vkf_status"] != "failed":
            fail("a check over the tolerance: rc %d, %s" % (proc.returncode, proc.stdout[-400:]))

        # Sustained mode: one sample per back-to-back iteration, each shown as it ends.
        proc = run(EXE, SMALL + ["-p", "0", "-n", "4", "--sustained", "3", "-o", "json"])
        if proc.returncode != 0:
            fail("--sustained exited %d: %s" % (proc.returncode, proc.stderr))
        else:
            row = json.loads(proc.stdout)[0]
            shown = [l for l in proc.stderr.splitlines() if "iteration" in l]
            if len(row["samples_ts"]) != 3 or not row["vkf_sustained"] or len(shown) != 3:
                fail("--sustained 3: samples %s, sustained %s, lines %s" % (row["samples_ts"], row["vkf_sustained"],
                                                                           shown))

        # Bad input: a clear message, not a crash.
        for args, words in ((["--pg", "8"], "--pg needs two counts"), (["-p", "0", "-n", "0"], "no tests")):
            proc = run(EXE, ["llama", "-m", MODEL] + args)
            if proc.returncode != 2 or words not in proc.stderr:
                fail("%s: rc %d, %s" % (" ".join(args), proc.returncode, proc.stderr))


if __name__ == "__main__":
    main()
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("ok")
