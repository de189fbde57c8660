#!/usr/bin/env python3
"""End-to-end test of vkf-quantize and of vkf-run on quantized weights, on small random BLOOM
and MPT checkpoints written by vkf-make-checkpoint: for q8_0 and q4_0, the quantized
checkpoint runs with --check (against the reference on the dequantized weights) and
generates exactly what load-time quantization of the original generates (the same bytes on
the device); load-time quantization reports its error against the original weights; bad
formats, quantizing twice and loading a quantized checkpoint in another format are refused.

usage: quantize_cli_test.py PATH/TO/vkf-quantize PATH/TO/vkf-run PATH/TO/vkf-make-checkpoint
"""

import os
import sys
import tempfile

from cli_checks import expect_refused, fail, finish, run, run_json

QUANTIZE, RUN, MAKE = sys.argv[1], sys.argv[2], sys.argv[3]


def main():
    with tempfile.TemporaryDirectory(prefix="vkf_quantize_cli_") as tmp:
        for family, hidden, heads in (("bloom", 128, 4), ("mpt", 192, 6)):
            original = os.path.join(tmp, family)
            proc = run(MAKE, ["--out", original, "--family", family, "--layers", "2", "--hidden", str(hidden),
                              "--heads", str(heads), "--vocab", "301", "--dtype", "f32", "--seed", "5"])
            if proc.returncode != 0:
                raise SystemExit("vkf-make-checkpoint failed: " + proc.stderr)
            # An fp32 KV cache: the reference does not round K and V, so --check sees the weights only.
            prompt = ["--prompt-ids", "3,14,15,92,65", "--n-predict", "6", "--kv", "f32"]
            for fmt in ("q8_0", "q4_0"):
                out = os.path.join(tmp, family + "-" + fmt)
                proc = run(QUANTIZE, ["--model", original, "--to", fmt, "--out", out])
                if proc.returncode != 0 or not os.path.exists(os.path.join(out, "config.json")):
                    fail("vkf-quantize %s %s exited %d: %s" % (family, fmt, proc.returncode, proc.stderr))
                    continue
                stored = run_json(RUN, ["--model", out, "--check"] + prompt)
                at_load = run_json(RUN, ["--model", original, "--weights", fmt, "--check"] + prompt)
                if stored is None or at_load is None:
                    continue
                name = "%s %s" % (family, fmt)
                if stored["model"]["weights"] != fmt or at_load["model"]["weights"] != fmt:
                    fail("%s: weights reported as %s / %s" % (name, stored["model"]["weights"],
                                                             at_load["model"]["weights"]))
                if stored["generated_ids"] != at_load["generated_ids"]:
                    fail("%s: the quantized checkpoint generates %s, load-time quantization %s" %
                         (name, stored["generated_ids"], at_load["generated_ids"]))
                if stored["model"]["weight_bytes"] != at_load["model"]["weight_bytes"]:
                    fail("%s: device bytes differ" % name)
                kernel = stored["check"]["max_rel_logit_error"]
                original_error = at_load["check"].get("max_rel_logit_error_vs_original_weights")
                if not kernel < 1e-4:
                    fail("%s: logits %.3g away from the reference on the dequantized weights" % (name, kernel))
                bound = 2e-2 if fmt == "q8_0" else 0.3  # the formats' own error, see test_quantized_model.cpp
                if original_error is None or not original_error < bound:
                    fail("%s: error against the original weights %s, bound %g" % (name, original_error, bound))
                print("%s: %.3g against the dequantized weights, %.3g against the original ones" %
                      (name, kernel, original_error or float("nan")))
                if fmt == "q4_0":
                    expect_refused(QUANTIZE, ["--model", out, "--to", "q8_0", "--out", out + "-again"], 1,
                                   "already quantized")
                    expect_refused(RUN, ["--model", out, "--weights", "f16"] + prompt, 1, "quantized as q4_0")
        expect_refused(QUANTIZE, ["--model", os.path.join(tmp, "bloom"), "--to", "q5_0", "--out",
                                  os.path.join(tmp, "x")], 2, "--to")
        expect_refused(QUANTIZE, ["--model", os.path.join(tmp, "missing"), "--to", "q8_0", "--out",
                                  os.path.join(tmp, "x")], 1, "missing")
    return finish("ok")


if __name__ == "__main__":
    sys.exit(main())
