#!/usr/bin/env python3
"""vkf-quantize --format gguf for the decoder families beyond BLOOM (issue 44): MPT, Refact, Baichuan, Jais.

For each case, a random tiny checkpoint (vkf-make-checkpoint --preset tiny, f32) is written by
vkf-quantize --format gguf --to f32, f16 and q8_0, and the same directory is converted the way
llama.cpp's converter does it by gguf_families_test.py's converters (conversion/mpt.py,
refact.py's q/kv and gate_up splits, baichuan.py's W_pack split and q/k row permutation, jais.py's transposes, muP scales and
LM head, in numpy,
with llama.cpp's gguf-py from npm's node-llama-cpp) plus the general.* keys base.py writes, then:

- gguf-py reads both files: the same keys with the same types and values, the same tensors with
  the same names, shapes and types (conversion/base.py's: 1-D tensors and POS_EMBD F32, other
  matrices in the output type); F32 and F16 tensors byte for byte the converter's; Q8_0 tensors,
  dequantized by gguf-py, within half a block scale of the converter's F32 tensor.
- vkf-run --check on the written file gives the directory's greedy ids, a reference error below
  gguf_families_test.py's bound, and logits identical to the directory's in the same weight format
  (Jais: within the rounding of its muP scales applied to the weights).
- Refact and Jais (with a tokenizer.json, which llama.cpp needs): llama.cpp's libllama loads the
  written file and its logits are within gguf_families_llama.py's bounds of vkf-run's.
- Falcon, which llama.cpp's reader in vkformer does not read, is refused by name.

usage: gguf_write_families_test.py VKF_QUANTIZE VKF_RUN VKF_MAKE_CHECKPOINT NPM_DIR
Exit 77 (skipped) when node, npm, git or numpy is missing or npm cannot install the package.
"""

import json
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "io"))
import gguf_compare  # noqa: E402  (gguf-py's installation)
from cli_checks import fail, failures, run, run_json  # noqa: E402
from gguf_run_test import read_safetensors  # noqa: E402
import gguf_families_test as families  # noqa: E402  (the converters, line for line llama.cpp's)
from gguf_write_test import field_value  # noqa: E402
import gguf_families_llama  # noqa: E402  (llama.cpp's bounds)
import llama_logits  # noqa: E402  (llama.cpp's own logits)

# name -> (family flag, vkf-make-checkpoint options)
CASES = {
    "mpt": ("mpt", ["--bias", "--qk-ln", "--kv-heads", "2", "--clip-qkv", "4", "--alibi-bias-max", "6"]),
    "mpt-no-bias": ("mpt", []),
    "refact": ("refact", []),
    "baichuan": ("baichuan", []),
    "jais": ("jais", []),
}
# jais.py multiplies the embedding and LM head by the muP scales the directory's model applies
# to the activations: the same model rounded apart, relative to the largest logit (f32:
# gguf_families_test.py's SCALED; q8_0: its Q8_APART, the scaled weights quantized).
APART = {("jais", "f32"): families.SCALED["jais"]["f32"], ("jais", "f16"): families.SCALED["jais"]["f16"],
         ("jais", "q8_0"): families.Q8_APART}
# gguf_families_test.py's refact() writes a `none` tokenizer so that llama.cpp loads a file
# without one; the converter (and vkf-quantize) write tokenizer keys only from tokenizer.json.
NOT_THE_CONVERTERS = ("tokenizer.ggml.model", "refact.vocab_size")
TYPES = ("f32", "f16", "q8_0")
# conversion/base.py's tensors kept F32 whatever the output type (besides 1-D ones and norms).
ALWAYS_F32 = ("position_embd.weight",)


def converter_file(gguf, np, model_dir, out, outtype):
    """convert_hf_to_gguf.py --outtype OUTTYPE (q8_0: gguf-py's own Q8_0) of model_dir."""
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        hp = json.load(f)
    arch, body = families.CONVERTERS[hp["model_type"]]
    tensors = read_safetensors(np, os.path.join(model_dir, "model.safetensors"))
    writer = gguf.GGUFWriter(out, arch)
    writer.add_type(gguf.GGUFType.MODEL)
    writer.add_name(os.path.basename(os.path.normpath(model_dir)))
    writer.add_size_label(gguf.size_label(sum(math.prod(t.shape) for t in tensors.values()), 0, 0, 0))
    written = list(body(gguf, np, hp, tensors, writer))
    for key in NOT_THE_CONVERTERS:
        writer.kv_data[0].pop(key, None)
    writer.add_file_type({"f32": gguf.LlamaFileType.ALL_F32, "f16": gguf.LlamaFileType.MOSTLY_F16,
                          "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}[outtype])
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    for name, data in written:
        data = data.astype(np.float32)
        matrix = data.ndim == 2 and name not in ALWAYS_F32 and not name.endswith("_norm.weight")
        if outtype == "q8_0" and matrix:
            q = gguf.GGMLQuantizationType.Q8_0
            writer.add_tensor(name, gguf.quants.quantize(data, q), raw_dtype=q)
        elif outtype == "f16" and matrix:
            writer.add_tensor(name, np.ascontiguousarray(data.astype(np.float16)))
        else:
            writer.add_tensor(name, np.ascontiguousarray(data))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def compare_file(gguf, np, label, ours_path, theirs_path, f32_path):
    ours, theirs, f32 = gguf.GGUFReader(ours_path), gguf.GGUFReader(theirs_path), gguf.GGUFReader(f32_path)
    for key in sorted(set(ours.fields) | set(theirs.fields)):
        a, b = ours.fields.get(key), theirs.fields.get(key)
        if a is None or b is None:
            fail("%s: key %s only in %s" % (label, key, "the converter's file" if a is None else "ours"))
        elif [t.name for t in a.types] != [t.name for t in b.types] or field_value(a) != field_value(b):
            fail("%s: %s is %s %r, the converter's %s %r" % (label, key, [t.name for t in a.types], field_value(a),
                                                            [t.name for t in b.types], field_value(b)))
    theirs_tensors = {t.name: t for t in theirs.tensors}
    f32_tensors = {t.name: t for t in f32.tensors}
    for t in ours.tensors:
        ref = theirs_tensors.get(t.name)
        if ref is None:
            fail("%s: tensor %s is not the converter's" % (label, t.name))
            continue
        if (t.tensor_type.name, [int(d) for d in t.shape]) != (ref.tensor_type.name, [int(d) for d in ref.shape]):
            fail("%s: %s is %s %s, the converter's %s %s" % (label, t.name, t.tensor_type.name, list(t.shape),
                                                            ref.tensor_type.name, list(ref.shape)))
            continue
        if t.tensor_type.name in ("F32", "F16"):
            if bytes(t.data.tobytes()) != bytes(ref.data.tobytes()):
                fail("%s: %s bytes differ from the converter's" % (label, t.name))
            continue
        original = np.asarray(f32_tensors[t.name].data, dtype=np.float64).reshape((-1, 32))
        deq = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64).reshape((-1, 32))
        d = np.frombuffer(bytes(t.data.tobytes()), dtype=np.uint8).reshape((-1, 34))[:, :2]
        d = np.abs(d.copy().view(np.float16).astype(np.float64)).reshape((-1, 1))
        if deq.shape != original.shape or not np.all(np.abs(deq - original) <= d * 0.5 * (1 + 1e-6) + 1e-30):
            fail("%s: %s dequantized is not within d/2 of the converter's F32 tensor" % (label, t.name))
    if len(ours.tensors) != len(theirs.tensors) or len(ours.fields) != len(theirs.fields):
        fail("%s: %d keys and %d tensors, the converter's %d and %d" % (label, len(ours.fields), len(ours.tensors),
                                                                      len(theirs.fields), len(theirs.tensors)))
    print("%-18s %d keys and %d tensors as the converter writes them" % (label, len(ours.fields), len(ours.tensors)))


def same_run(np, vkf_run, label, gguf_path, model_dir, weights, tmp, apart=None):
    a_path, b_path = os.path.join(tmp, "gguf.npy"), os.path.join(tmp, "dir.npy")
    ours = families.greedy(vkf_run, gguf_path, weights, a_path)
    theirs = families.greedy(vkf_run, model_dir, weights, b_path)
    if ours is None or theirs is None:
        return
    error = ours.get("check", {}).get("max_rel_logit_error")
    la, lb = np.load(a_path), np.load(b_path)
    distance = float(np.max(np.abs(la - lb)) / np.max(np.abs(lb))) if la.shape == lb.shape else float("inf")
    close = distance < apart if apart is not None else la.shape == lb.shape and np.array_equal(la, lb)
    if (ours.get("generated_ids") != theirs.get("generated_ids") or error is None or not error < families.BOUND
            or not close):
        fail("%s: GGUF ids %r, directory %r, reference error %r; logits %g apart (allowed: %s)" % (
            label, ours.get("generated_ids"), theirs.get("generated_ids"), error, distance,
            apart if apart is not None else "none"))
    else:
        print("%-18s vkf-run: ids %s, reference error %.3g, logits %s the directory's"
              % (label, ours["generated_ids"], error,
                 "identical to" if apart is None else "%.3g apart from" % distance))


def against_llama(np, npm_dir, gguf_py, vkf_quantize, vkf_run, tmp):
    """Refact and Jais written by vkf-quantize run by llama.cpp's libllama (llama_logits.cpp): the
    logits vkf-run gives for the file within gguf_families_llama.py's bounds of llama.cpp's. The
    directory gets a byte-level BPE tokenizer.json (bloom_style.json, 291 tokens), without which
    llama.cpp loads no model. (MPT and Baichuan are left out: llama.cpp runs the tiny random MPT
    3.7e-4 apart, without the settings it has no key for, and a 2-block Baichuan not as the ALiBi
    13B.)"""
    why = llama_logits.unavailable()
    if why is not None:
        print("llama.cpp checks skipped: %s" % why)
        return
    tool, libs = llama_logits.build(npm_dir, gguf_py)
    tokenizer = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "text", "data", "bloom_style.json")
    prompt = [int(i) for i in families.PROMPT.split(",")]
    for case in ("refact", "jais"):
        model = os.path.join(tmp, "%s-tokenized" % case)
        os.makedirs(model)
        for name in ("config.json", "model.safetensors"):
            os.symlink(os.path.join(tmp, case, name), os.path.join(model, name))
        os.symlink(tokenizer, os.path.join(model, "tokenizer.json"))
        for outtype in TYPES:
            label = "%s %s" % (case, outtype)
            path = os.path.join(tmp, "%s-tokenized-%s.gguf" % (case, outtype))
            proc = run(vkf_quantize, ["--model", model, "--to", outtype, "--format", "gguf", "--out", path])
            if proc.returncode != 0:
                fail("%s: vkf-quantize exited %d: %s" % (label, proc.returncode, proc.stderr))
                continue
            npy = os.path.join(tmp, "llama-check.npy")
            ours = families.greedy(vkf_run, path, outtype, npy)
            if ours is None:
                continue
            a = np.load(npy)
            theirs = llama_logits.logits(np, tool, libs, path, prompt + ours["generated_ids"][:-1],
                                         os.path.join(tmp, "llama.f32"))[len(prompt) - 1:]
            bound = gguf_families_llama.APART[outtype]
            apart = float(np.max(np.abs(a - theirs)) / np.max(np.abs(theirs))) if a.shape == theirs.shape else 1.0
            if not apart < bound:
                fail("%s: vkf-run's logits %g apart from llama.cpp's on the written file, expected < %g"
                     % (label, apart, bound))
            else:
                print("%-18s llama.cpp loads the written file: logits %.3g apart from vkf-run's (< %g)"
                      % (label, apart, bound))


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    vkf_quantize, vkf_run, make, npm_dir = sys.argv[1], sys.argv[2], sys.argv[3], os.path.abspath(sys.argv[4])
    gguf, np = gguf_compare.gguf_modules(npm_dir)

    with tempfile.TemporaryDirectory(prefix="vkf_gguf_write_families_") as tmp:
        for case, (family, options) in CASES.items():
            model = os.path.join(tmp, case)
            proc = run(make, ["--out", model, "--family", family, "--preset", "tiny", "--dtype", "f32"] + options)
            if proc.returncode != 0:
                fail("vkf-make-checkpoint --family %s: exit %d: %s" % (family, proc.returncode, proc.stderr))
                continue
            f32_theirs = os.path.join(tmp, "%s-converter-f32.gguf" % case)
            for outtype in TYPES:
                label = "%s %s" % (case, outtype)
                ours = os.path.join(tmp, "%s-%s.gguf" % (case, outtype))
                proc = run(vkf_quantize, ["--model", model, "--to", outtype, "--format", "gguf", "--out", ours])
                if proc.returncode != 0:
                    fail("%s: vkf-quantize exited %d: %s" % (label, proc.returncode, proc.stderr))
                    continue
                theirs = os.path.join(tmp, "%s-converter-%s.gguf" % (case, outtype))
                converter_file(gguf, np, model, theirs, outtype)
                compare_file(gguf, np, label, ours, theirs, f32_theirs)
                same_run(np, vkf_run, label, ours, model, outtype, tmp, APART.get((family, outtype)))
        against_llama(np, npm_dir, gguf_compare.gguf_py_dir(npm_dir), vkf_quantize, vkf_run, tmp)
        # A family the writer does not write is refused by name.
        model = os.path.join(tmp, "falcon")
        if run(make, ["--out", model, "--family", "falcon", "--preset", "tiny"]).returncode == 0:
            out = os.path.join(tmp, "falcon.gguf")
            proc = run(vkf_quantize, ["--model", model, "--to", "f32", "--format", "gguf", "--out", out])
            if proc.returncode == 0 or "not falcon" not in proc.stderr or os.path.exists(out):
                fail("falcon: exit %d, expected a refusal naming it: %r" % (proc.returncode, proc.stderr))
            else:
                print("falcon             refused: %s" % proc.stderr.strip().splitlines()[-1])
        else:
            fail("vkf-make-checkpoint --family falcon failed")

    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
