#!/usr/bin/env python3
"""End-to-end test of vkf-run --devices and --split (issue 31) on the shipped model
(models/kjv-bloom, 4 layers): the one test device opened two and three times stands in for
several devices. Greedy, a text prompt of odd length run in 4-token chunks gives the same ids
and text split 2,2, 1,2,1 and auto as on one device, --check holds, each stage holds its
layers and the stages' weights add up to the model's plus the tied embedding held again on
the last; bad splits are refused naming the problem (usage errors exit 2, a split that does
not fit the model exits 1). A --prompt-file of 5 prompts, 4 at once, over --devices 0,0 (a
pipelined SplitBatch) gives every prompt the one-device --prompt-file run's ids and text, with
steps overlapped.

usage: split_cli_test.py PATH/TO/vkf-run MODEL_DIR
"""

import os
import sys
import tempfile

from cli_checks import expect_refused, fail, finish, run_json

RUN, MODEL = sys.argv[1:3]
PROMPT = "And God said, Let there be light: and"
ARGS = ["--model", MODEL, "--prompt", PROMPT, "--n-predict", "6", "--ignore-eos", "--chunk", "4"]

one = run_json(RUN, ARGS)
if one is not None:
    if len(one["prompt_ids"]) % 2 == 0 or len(one["prompt_ids"]) <= 8:
        fail("the prompt should be of odd length over several 4-token chunks: %r" % one["prompt_ids"])
    for split, devices, layers in [("2,2", "0,0", [[0, 2], [2, 4]]), ("1,2,1", "0,0,0", [[0, 1], [1, 3], [3, 4]]),
                                   ("auto", "0,0", [[0, 2], [2, 4]])]:
        got = run_json(RUN, ARGS + ["--devices", devices, "--split", split, "--check"])
        if got is None:
            continue
        if got["generated_ids"] != one["generated_ids"] or got["text"] != one["text"]:
            fail("--split %s: %s %r, one device %s %r" % (split, got["generated_ids"], got["text"],
                                                         one["generated_ids"], one["text"]))
        split_object = got.get("split", {})
        per_stage = split_object.get("per_stage", [])
        if split_object.get("mode") != "devices" or split_object.get("stages") != len(layers) or \
                split_object.get("layers") != layers or [s["layers"] for s in per_stage] != layers:
            fail("--split %s: split object %r, expected %d stages holding %r" % (split, split_object, len(layers),
                                                                                 layers))
            continue
        error = got.get("check", {}).get("max_rel_logit_error")
        if error is None or not error < 1e-3:
            fail("--split %s: --check error %r" % (split, error))
        # Every stage but the last hands its rows on: (stages - 1) per step, every token's row once.
        steps = len(got["generated_ids"]) - 1 + (len(one["prompt_ids"]) + 3) // 4
        rows = len(one["prompt_ids"]) + len(got["generated_ids"]) - 1
        if split_object["hand_offs"] != (len(layers) - 1) * steps or \
                split_object["transfer_bytes"] != (len(layers) - 1) * rows * one["model"]["hidden"] * 4 or \
                not 0 < split_object["transfer_ms"] < 1000 * (got["prefill_seconds"] + got["decode_seconds"]):
            fail("--split %s: %r hand-offs, %r bytes in %r ms; expected %d and %d" %
                 (split, split_object["hand_offs"], split_object["transfer_bytes"], split_object["transfer_ms"],
                  (len(layers) - 1) * steps, (len(layers) - 1) * rows * one["model"]["hidden"] * 4))
        weights = sum(s["weight_bytes"] for s in per_stage)
        if weights != got["model"]["weight_bytes"] or not weights > one["model"]["weight_bytes"]:
            fail("--split %s: stage weights %d, total %r, one device %r" %
                 (split, weights, got["model"]["weight_bytes"], one["model"]["weight_bytes"]))


def check_prompt_file():
    """--devices 0,0 --prompt-file --parallel 4: one device's completions, the stages overlapped."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "prompts.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("And God said unto Moses,\nIn the beginning\nAnd it came to pass, when the LORD had spoken\n"
                    "Blessed are the\nThou shalt not\n")
        args = ["--model", MODEL, "--prompt-file", path, "--parallel", "4", "--n-predict", "8", "--ignore-eos",
                "--chunk", "4"]
        one_file = run_json(RUN, args)
        got = run_json(RUN, args + ["--devices", "0,0"])
        if one_file is None or got is None:
            return
        ids = [(r["generated_ids"], r["text"]) for r in got["results"]]
        if ids != [(r["generated_ids"], r["text"]) for r in one_file["results"]]:
            fail("--devices 0,0 --prompt-file: %r, one device %r" % (ids, [
                (r["generated_ids"], r["text"]) for r in one_file["results"]]))
        split_object = got.get("split", {})
        if split_object.get("layers") != [[0, 2], [2, 4]] or not split_object.get("overlapped", 0) > 0 or \
                split_object.get("max_in_flight") != 2 or \
                split_object.get("hand_offs") != split_object.get("steps") or \
                len(split_object.get("per_stage", [])) != 2:
            fail("--devices 0,0 --prompt-file: split object %r" % split_object)
        else:
            print("--devices 0,0 --prompt-file --parallel 4: %d steps, %d overlapped" %
                  (split_object["steps"], split_object["overlapped"]))


check_prompt_file()
expect_refused(RUN, ARGS + ["--devices", "0,0", "--split", "1,1"], 1, "sum to 2, but the model has 4 layers")
expect_refused(RUN, ARGS + ["--devices", "0,0", "--split", "4,0"], 1, "stage 1 has no layers")
expect_refused(RUN, ARGS + ["--devices", "0,0", "--split", "1,1,2"], 2, "3 stages for 2 devices")
expect_refused(RUN, ARGS + ["--devices", "0,0,0,0,0"], 1, "5 devices, but the model has only 4 layers")
expect_refused(RUN, ARGS + ["--devices", "0,9"], 1, "no usable device with that index")
expect_refused(RUN, ARGS + ["--devices", "0,,0"], 2, "an empty device")
expect_refused(RUN, ARGS + ["--split", "2,2"], 2, "give --devices")
expect_refused(RUN, ARGS + ["--devices", "0,0", "--split", "x"], 2, "give auto or the layers of every stage")
sys.exit(finish("vkf-run --devices/--split: same ids and text as one device, refusals named"))
