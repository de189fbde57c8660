#!/usr/bin/env python3
"""End-to-end test of text in and out on the shipped model (models/kjv-bloom): vkf-run
--prompt streams text that is the decoding of the ids it generated (checked against the
CPU reference with --check), stops at a --stop string and at the end-of-sequence id of
config.json, keeps one session over --interactive turns; vkf-perplexity gives the table,
the JSON and the plot, and the same 128-token perplexity as the training script's PyTorch
evaluation on the first held-out tokens (eval.json "prefix"); misuse is refused clearly.

usage: text_cli_test.py PATH/TO/vkf-run PATH/TO/vkf-perplexity PATH/TO/vkf-tokenize MODEL_DIR
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

from cli_checks import command, expect_refused, fail, finish, run, run_json

RUN, PERPLEXITY, TOKENIZE, MODEL = sys.argv[1:5]
PROMPT = "And God said unto Moses,"


def decode(ids):
    proc = run(TOKENIZE, ["--tokenizer", os.path.join(MODEL, "tokenizer.json"), "--decode",
                          ",".join(str(i) for i in ids)])
    if proc.returncode != 0:
        fail("vkf-tokenize --decode exited %d: %s" % (proc.returncode, proc.stderr))
    return proc.stdout[:-1] if proc.stdout.endswith("\n") else proc.stdout


def check_generation():
    args = ["--model", MODEL, "--prompt", PROMPT, "--n-predict", "24", "--ignore-eos"]
    # Streamed text: the prompt, then the generated text, then the figures.
    proc = run(RUN, args + ["--check", "--quiet"])
    if proc.returncode != 0:
        fail("vkf-run --prompt --check exited %d: %s" % (proc.returncode, proc.stderr))
        return
    out = run_json(RUN, args)
    if out is None:
        return
    if len(out["generated_ids"]) != 24 or out["stop_reason"] != "length":
        fail("expected 24 tokens and stop_reason length: %s" % out)
    if out["text"] != decode(out["generated_ids"]):
        fail("the text %r is not the decoding of the generated ids %r" % (out["text"], decode(out["generated_ids"])))
    if not proc.stdout.startswith(PROMPT + out["text"] + "\n"):
        fail("the streamed output does not start with prompt + text:\n%r\n%r" % (proc.stdout, PROMPT + out["text"]))
    if len(out["text"].split()) < 5:
        fail("24 tokens of an English model should make several words: %r" % out["text"])
    if "prefill:" not in proc.stdout or "check: largest relative logit error" not in proc.stdout:
        fail("the figures are missing after the text: %r" % proc.stdout)
    # Loading, pipeline preparation, prefill and decoding each on a line of their own, in order.
    figures = re.findall(r"^(load|prepare|prefill|decode): *(.*)$", proc.stdout, re.M)
    if [name for name, _ in figures] != ["load", "prepare", "prefill", "decode"]:
        fail("expected load, prepare, prefill and decode lines in that order: %r" % proc.stdout)
    elif not re.match(r"(\d+) pipelines in [\d.]+ s \((\d+) made on (\d+) threads", figures[1][1]) or \
            int(re.match(r"(\d+)", figures[1][1]).group(1)) == 0:
        fail("the prepare line names no pipelines: %r" % figures[1][1])

    # Quantized K/V (docs/QUANTIZATION.md, "KV cache"): "kv" names the storage, and K and V of a
    # token in every layer take 0.53125x (q8_0) and 0.28125x (q4_0) fp16's bytes (34 and 18 of
    # 64 bytes per 32 values: the scales are packed per key row, 8 heads of 32 here); q8_0's
    # greedy text is fp16's on this prompt.
    for kv, share in (("f16", 1.0), ("q8_0", 0.53125), ("q4_0", 0.28125), ("k q8_0 v q4_0", 0.40625)):
        flags = ["--kv-k", "q8_0", "--kv-v", "q4_0"] if kv.startswith("k ") else ["--kv", kv]
        quant = run_json(RUN, args + flags)
        if quant is None:
            continue
        if quant["kv"] != kv or quant["kv_bytes_per_token"] != share * out["kv_bytes_per_token"]:
            fail("--kv %s: kv %r, %r bytes per token against f16's %r" % (kv, quant["kv"], quant["kv_bytes_per_token"],
                                                                      out["kv_bytes_per_token"]))
        if kv == "q8_0" and quant["generated_ids"] != out["generated_ids"]:
            fail("--kv q8_0 generated %r, f16 %r" % (quant["generated_ids"], out["generated_ids"]))

    # A stop string taken from that text: generation ends where it starts, not printed.
    words = out["text"].split()
    stop = " " + words[3]
    cut = out["text"].find(stop)
    stopped = run_json(RUN, args + ["--stop", "no such text", "--stop", stop])
    if stopped and (stopped["text"] != out["text"][:cut] or stopped["stop_reason"] != "stop string"):
        fail("--stop %r: expected text %r, got %r (%s)" % (stop, out["text"][:cut], stopped["text"],
                                                           stopped["stop_reason"]))

    # The end-of-sequence id of config.json: a copy whose eos is the third generated token.
    with tempfile.TemporaryDirectory(prefix="vkf_text_cli_") as tmp:
        for name in ("model.safetensors", "tokenizer.json"):
            os.symlink(os.path.abspath(os.path.join(MODEL, name)), os.path.join(tmp, name))
        with open(os.path.join(MODEL, "config.json")) as f:
            config = json.load(f)
        eos = out["generated_ids"][2]
        config["eos_token_id"] = [eos]
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(config, f)
        ended = run_json(RUN, ["--model", tmp, "--prompt", PROMPT, "--n-predict", "24"])
        first = out["generated_ids"].index(eos)
        if ended and (ended["generated_ids"] != out["generated_ids"][:first + 1] or ended["stop_reason"] != "eos"):
            fail("eos %d: expected %s and stop_reason eos, got %s" % (eos, out["generated_ids"][:first + 1], ended))
        # No tokenizer.json: text needs one, and the message says so.
        os.remove(os.path.join(tmp, "tokenizer.json"))
        expect_refused(RUN, ["--model", tmp, "--prompt", PROMPT], 1, "tokenizer.json")


def token_count(text):
    proc = run(TOKENIZE, ["--tokenizer", os.path.join(MODEL, "tokenizer.json"), "--text", text, "--json"])
    return len(json.loads(proc.stdout)["ids"]) if proc.returncode == 0 else -1


def check_interactive():
    turns = ["In the beginning", "And the LORD said"]
    proc = subprocess.run(command(RUN, ["--model", MODEL, "--interactive", "--n-predict", "8", "--ignore-eos"]),
                          input="\n".join(turns) + "\n", capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        fail("--interactive exited %d: %s" % (proc.returncode, proc.stderr))
        return
    # The first answer is what a one-shot run of the first turn generates.
    first = run_json(RUN, ["--model", MODEL, "--prompt", turns[0], "--n-predict", "8", "--ignore-eos"])
    if first and (not proc.stdout.startswith(first["text"] + "\n") or proc.stdout == first["text"] + "\n"):
        fail("--interactive: the first answer is not the one-shot run's %r followed by a second: %r" %
             (first["text"], proc.stdout))
    # One session holds both turns and both answers (the last answer's last token not yet run).
    expected = token_count(turns[0]) + 8 - 1 + 1 + token_count(turns[1]) + 8 - 1
    if "%d tokens in the session" % expected not in proc.stderr:
        fail("--interactive: expected %d tokens in the session: %s" % (expected, proc.stderr))


def check_perplexity():
    heldout = os.path.join(MODEL, "heldout.txt")
    with tempfile.TemporaryDirectory(prefix="vkf_ppl_cli_") as tmp:
        plot = os.path.join(tmp, "ppl.svg")
        out = run_json(PERPLEXITY, ["--model", MODEL, "--file", heldout, "--ctx", "32,64,96", "--max-tokens", "400",
                                    "--plot", plot])
        if out:
            rows = out["results"]
            if [r["ctx"] for r in rows] != [32, 64, 96]:
                fail("vkf-perplexity: expected rows for 32, 64, 96: %s" % rows)
            for r in rows:
                c = r["ctx"]
                expect = (400 // c) * (c - 1 - c // 2)
                if r["scored_tokens"] != expect or not 1.0 < r["perplexity"] < 1e4:
                    fail("vkf-perplexity ctx %d: %d scored tokens (expected %d), perplexity %s" %
                         (c, r["scored_tokens"], expect, r["perplexity"]))
            try:
                ElementTree.parse(plot)
            except (OSError, ElementTree.ParseError) as e:
                fail("--plot did not write a well-formed SVG: %s" % e)
        proc = run(PERPLEXITY, ["--model", MODEL, "--file", heldout, "--ctx", "64", "--max-tokens", "200"])
        if proc.returncode != 0 or "perplexity" not in proc.stdout or "second half" not in proc.stdout:
            fail("vkf-perplexity table: exit %d: %s %s" % (proc.returncode, proc.stdout, proc.stderr))
        expect_refused(PERPLEXITY, ["--model", MODEL, "--file", heldout, "--ctx", "64", "--max-tokens", "50"], 1,
                       "fewer than one window")
        expect_refused(PERPLEXITY, ["--model", MODEL, "--file", heldout, "--ctx", "2"], 2, "--ctx")
        expect_refused(PERPLEXITY, ["--model", MODEL, "--file", os.path.join(tmp, "missing.txt")], 1, "missing.txt")

    # The independent reference: PyTorch's perplexity of the held-out text's first tokens at
    # 1x and 16x the training length (training/evaluate_prefix.py).
    with open(os.path.join(MODEL, "eval.json")) as f:
        prefix = json.load(f)["prefix"]
    for reference in prefix:
        out = run_json(PERPLEXITY, ["--model", MODEL, "--file", heldout, "--ctx", str(reference["ctx"]),
                                    "--max-tokens", str(reference["tokens"]), "--kv", "f32"])
        if out:
            got = out["results"][0]
            if got["scored_tokens"] != reference["scored_tokens"] or abs(got["perplexity"] / reference["perplexity"] -
                                                                         1) > 1e-5:
                fail("ctx %d: perplexity %.6f over %d tokens against PyTorch's %.6f over %d" %
                     (reference["ctx"], got["perplexity"], got["scored_tokens"], reference["perplexity"],
                      reference["scored_tokens"]))
            else:
                print("ctx %d, first %d held-out tokens: perplexity %.6f, PyTorch %.6f" %
                      (reference["ctx"], reference["tokens"], got["perplexity"], reference["perplexity"]))


def main():
    expect_refused(RUN, ["--model", MODEL, "--prompt-ids", "1,2", "--stop", "x"], 2, "--stop needs text")
    expect_refused(RUN, ["--model", MODEL, "--prompt", "a", "--prompt-ids", "1"], 2, "give the prompt once")
    expect_refused(RUN, ["--model", MODEL, "--interactive", "--json"], 2, "--interactive")
    check_generation()
    check_interactive()
    check_perplexity()
    return finish("text in and out: all checks passed")


if __name__ == "__main__":
    sys.exit(main())
