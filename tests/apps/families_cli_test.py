#!/usr/bin/env python3
"""Every ALiBi decoder family end to end through the programs: vkf-make-checkpoint --family F
writes a checkpoint in the family's Hugging Face layout (checked: config.json's model_type and
architectures, and the family's own tensor names in the safetensors header), vkf-run generates
from it with --check (the double-precision reference on the same tokens) with an fp32 and an
fp16 KV cache, and vkf-quantize's q8_0 checkpoint of it runs too. Options of another family are
refused.

usage: families_cli_test.py PATH/TO/vkf-run PATH/TO/vkf-make-checkpoint PATH/TO/vkf-quantize
"""

import json
import os
import struct
import sys
import tempfile

from cli_checks import expect_refused, fail, finish, run, run_json

RUN, MAKE, QUANTIZE = sys.argv[1], sys.argv[2], sys.argv[3]

# family flag -> (model_type, architectures[0], a tensor name the family's checkpoints hold, extra options)
FAMILIES = {
    "bloom": ("bloom", "BloomForCausalLM", "transformer.h.0.self_attention.query_key_value.weight", ["--post-ln"]),
    "mpt": ("mpt", "MPTForCausalLM", "transformer.blocks.0.attn.q_ln.weight",
            ["--kv-heads", "2", "--qk-ln", "--softmax-scale", "0.2", "--logit-scale", "0.5", "--bias"]),
    "falcon": ("falcon", "FalconForCausalLM", "transformer.h.0.self_attention.dense.bias", []),
    "baichuan": ("baichuan", "BaichuanForCausalLM", "model.layers.0.self_attn.W_pack.weight", []),
    "baichuan2": ("baichuan", "BaichuanForCausalLM", "model.layers.0.mlp.gate_proj.weight", []),
    "jais": ("jais", "JAISLMHeadModel", "transformer.h.0.mlp.c_fc2.weight", ["--alibi-train-len", "6"]),
    # Hugging Face's layout (attn.q + attn.kv, mlp.gate_up_proj), read through refact_layout.hpp.
    "refact": ("gpt_refact", "GPTRefactForCausalLM", "transformer.h.0.mlp.gate_up_proj.weight", []),
}


def safetensors_names(path):
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        return set(json.loads(f.read(length)).keys()) - {"__metadata__"}


def check_generation(model, label, extra):
    result = run_json(RUN, ["--model", model, "--prompt-ids", "3,1,4,1,5,9,2", "--n-predict", "9", "--check",
                            "--check-tolerance", "2e-3"] + extra)
    if result is None:
        return
    if len(result["generated_ids"]) != 9:
        fail("%s: %d ids generated, 9 asked" % (label, len(result["generated_ids"])))
    error = result["check"]["max_rel_logit_error"]
    print("%-28s largest relative logit error %.3g" % (label, error))
    if not error < 2e-3:
        fail("%s: logits differ from the reference by %g" % (label, error))


with tempfile.TemporaryDirectory() as tmp:
    for flag, (model_type, architecture, tensor, extra) in FAMILIES.items():
        model = os.path.join(tmp, flag)
        proc = run(MAKE, ["--out", model, "--family", flag, "--preset", "tiny", "--dtype", "f32"] + extra)
        if proc.returncode != 0:
            fail("vkf-make-checkpoint --family %s exited %d: %s" % (flag, proc.returncode, proc.stderr))
            continue
        with open(os.path.join(model, "config.json")) as f:
            config = json.load(f)
        if config.get("model_type") != model_type or config.get("architectures") != [architecture]:
            fail("%s: config.json says %s / %s" % (flag, config.get("model_type"), config.get("architectures")))
        names = safetensors_names(os.path.join(model, "model.safetensors"))
        if tensor not in names:
            fail("%s: %s is not in the checkpoint (%s ...)" % (flag, tensor, sorted(names)[:5]))
        check_generation(model, flag + ", kv f32", ["--kv", "f32"])
        check_generation(model, flag + ", kv f16", ["--kv", "f16"])
        quantized = model + "-q8_0"
        proc = run(QUANTIZE, ["--model", model, "--out", quantized, "--to", "q8_0"])
        if proc.returncode != 0:
            fail("vkf-quantize %s exited %d: %s" % (flag, proc.returncode, proc.stderr))
        else:
            check_generation(quantized, flag + " q8_0, kv f32", ["--kv", "f32"])

    # Options of another family are refused by name.
    out = os.path.join(tmp, "refused")
    expect_refused(MAKE, ["--out", out, "--family", "falcon", "--preset", "tiny", "--qk-ln"], 2, "MPT settings")
    expect_refused(MAKE, ["--out", out, "--family", "mpt", "--preset", "tiny", "--post-ln"], 2, "BLOOM setting")
    expect_refused(MAKE, ["--out", out, "--family", "bloom", "--preset", "tiny", "--alibi-train-len", "8"], 2,
                   "Jais settings")
    expect_refused(MAKE, ["--out", out, "--family", "baichuan2", "--preset", "tiny", "--vocab", "512"], 2,
                   "Baichuan2 is recognized by its vocabulary")

sys.exit(finish("every family ran end to end"))
