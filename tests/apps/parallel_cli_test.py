#!/usr/bin/env python3
"""End-to-end test of vkf-run --prompt-file and --parallel on the shipped model
(models/kjv-bloom): four prompts of a file (an empty line and a CRLF line among them, two
sharing a prefix longer than a KV block) run three at once in one batch, the fourth joining
when one finishes. Greedy, every prompt's ids and text equal those of running it alone with
--prompt, and --check holds per prompt; seeded sampling gives each prompt seed + its index
and the same ids whatever --parallel is; the text output is one block per prompt labelled
with its line, in the file's order; the aggregate figures and KV blocks add up; misuse is
refused as a usage error (exit status 2).

usage: parallel_cli_test.py PATH/TO/vkf-run MODEL_DIR
"""

import os
import sys
import tempfile

from cli_checks import expect_refused, fail, finish, run, run_json

RUN, MODEL = sys.argv[1:3]
N_PREDICT = 8
SHARED = "And it came to pass, when the LORD had spoken unto Moses in the land of Egypt, that"
LINES = ["And God said unto Moses,", "", SHARED + " the children of Israel", "In the beginning\r",
         SHARED + " Pharaoh said"]
# The lines holding a prompt (1-based), and their text.
PROMPTS = [(i + 1, line.rstrip("\r")) for i, line in enumerate(LINES) if line.strip()]
BLOCK = 16


def alone(prompt, extra=()):
    return run_json(RUN, ["--model", MODEL, "--prompt", prompt, "--n-predict", str(N_PREDICT), "--ignore-eos"] +
                    list(extra))


def check_greedy(path):
    args = ["--model", MODEL, "--prompt-file", path, "--n-predict", str(N_PREDICT), "--ignore-eos"]
    batch = run_json(RUN, args + ["--parallel", "3", "--check"])
    if batch is None:
        return
    results = batch["results"]
    if [r["line"] for r in results] != [line for line, _ in PROMPTS] or batch["parallel"] != 3:
        fail("results for lines %s with parallel %r, expected lines %s and 3" %
             ([r["line"] for r in results], batch["parallel"], [line for line, _ in PROMPTS]))
        return
    for r, (line, text) in zip(results, PROMPTS):
        single = alone(text)
        if single is None:
            continue
        if r["prompt"] != text or r["prompt_ids"] != single["prompt_ids"]:
            fail("line %d: prompt %r ids %r, alone %r" % (line, r["prompt"], r["prompt_ids"], single["prompt_ids"]))
        if r["generated_ids"] != single["generated_ids"] or r["text"] != single["text"]:
            fail("line %d: in the batch %s %r, alone %s %r" % (line, r["generated_ids"], r["text"],
                                                              single["generated_ids"], single["text"]))
        error = r.get("check", {}).get("max_rel_logit_error")
        if error is None or not error < 1e-3:
            fail("line %d: --check error %r" % (line, error))
        if r["stop_reason"] != "length" or not r["decode_tokens_per_second"] > 0:
            fail("line %d: stop %r, %r tokens/s" % (line, r["stop_reason"], r["decode_tokens_per_second"]))
    shared = [r for r in results if r["prompt"].startswith(SHARED)]
    if len(shared) != 2 or shared[0]["prompt_ids"][:BLOCK + 1] != shared[1]["prompt_ids"][:BLOCK + 1]:
        fail("two prompts should share more than a block of tokens: %r" % [r["prompt_ids"] for r in shared])
    total = batch["aggregate"]
    longest = max(len(r["prompt_ids"]) for r in results)
    blocks = 3 * -(-(longest + N_PREDICT - 1) // BLOCK)
    if total["kv_blocks_total"] != blocks or not 0 < total["kv_blocks_peak"] <= blocks:
        fail("KV blocks %r of %r, expected a peak in 1..%d of %d" % (total["kv_blocks_peak"],
                                                                   total["kv_blocks_total"], blocks, blocks))
    if total["generated_tokens"] != 4 * N_PREDICT or total["decode_tokens"] != 4 * (N_PREDICT - 1):
        fail("aggregate counts %r" % total)
    for key in ("decode_tokens_per_second", "per_sequence_decode_tokens_per_second", "tokens_per_second"):
        if not total[key] > 0:
            fail("aggregate %s is %r" % (key, total[key]))

    # More sequences than prompts: all four at once, the same ids.
    wide = run_json(RUN, args + ["--parallel", "8"])
    if wide and (wide["parallel"] != 4 or [r["generated_ids"] for r in wide["results"]] !=
                 [r["generated_ids"] for r in results]):
        fail("--parallel 8 over 4 prompts: parallel %r, ids %s" % (wide["parallel"],
                                                                   [r["generated_ids"] for r in wide["results"]]))

    # Text: one block per prompt, labelled with its line, in the file's order, then the figures.
    proc = run(RUN, args + ["--parallel", "3", "--quiet"])
    if proc.returncode != 0:
        fail("vkf-run --prompt-file exited %d: %s" % (proc.returncode, proc.stderr))
        return
    at = 0
    for r in results:
        block = "--- line %d: " % r["line"]
        start = proc.stdout.find(block, at)
        body = "\n" + r["prompt"] + r["text"] + "\n"
        if start < 0 or proc.stdout.find(body, start) != proc.stdout.find("\n", start):
            fail("no block %r followed by %r after offset %d:\n%s" % (block, body, at, proc.stdout))
            return
        at = start + len(block)
    for needle in ("tokens/s over the batch", "tokens/s per sequence", "blocks of 16 tokens in use at the peak"):
        if needle not in proc.stdout[at:]:
            fail("%r is not in the figures after the blocks:\n%s" % (needle, proc.stdout[at:]))


def check_sampled(path):
    args = ["--model", MODEL, "--prompt-file", path, "--n-predict", str(N_PREDICT), "--ignore-eos", "--temp", "0.9",
            "--seed", "11"]
    one = run_json(RUN, args)
    three = run_json(RUN, args + ["--parallel", "3"])
    if not one or not three:
        return
    seeds = [r["seed"] for r in three["results"]]
    if seeds != [11, 12, 13, 14] or [r["seed"] for r in one["results"]] != seeds:
        fail("seeds %s and %s, expected 11..14" % (seeds, [r["seed"] for r in one["results"]]))
    if [r["generated_ids"] for r in one["results"]] != [r["generated_ids"] for r in three["results"]]:
        fail("sampled ids depend on --parallel: %s vs %s" % ([r["generated_ids"] for r in one["results"]],
                                                             [r["generated_ids"] for r in three["results"]]))
    # The first prompt alone with seed 11 draws as in the batch.
    single = alone(PROMPTS[0][1], ["--temp", "0.9", "--seed", "11"])
    if single and single["generated_ids"] != three["results"][0]["generated_ids"]:
        fail("line 1 sampled alone %s, in the batch %s" % (single["generated_ids"],
                                                           three["results"][0]["generated_ids"]))


def check_refused(tmp, path):
    empty = os.path.join(tmp, "empty.txt")
    with open(empty, "w") as f:
        f.write("\n  \n\r\n")
    base = ["--model", MODEL]
    for args, text in (
            (["--prompt-file", empty], "holds no prompt"),
            (["--prompt-file", os.path.join(tmp, "missing.txt")], "--prompt-file"),
            (["--prompt-file", tmp], "--prompt-file"),
            (["--prompt", "x", "--parallel", "2"], "--parallel"),
            (["--prompt-file", path, "--prompt", "x"], "give the prompt once"),
            (["--prompt-file", path, "--interactive"], "--interactive"),
            (["--prompt-file", path, "--logits-out", os.path.join(tmp, "l.npy")], "--logits-out"),
            (["--prompt-file", path, "--parallel", "0"], "--parallel"),
            (["--prompt-file", path, "--n-predict", "4294967295"], "positions")):
        expect_refused(RUN, base + args, 2, text)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "prompts.txt")
        with open(path, "w", newline="") as f:
            f.write("\n".join(LINES) + "\n")
        check_greedy(path)
        check_sampled(path)
        check_refused(tmp, path)
    return finish("ok: --prompt-file and --parallel")


if __name__ == "__main__":
    sys.exit(main())
