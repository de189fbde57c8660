#!/usr/bin/env python3
"""vkf-quantize --format gguf against llama.cpp's own code, never vkformer's reader alone.

models/kjv-bloom (and a copy of it with a tokenizer_config.json holding special tokens and a
chat template, and one with BLOOM's Split pre-tokenizer) is written by vkf-quantize as GGUF with --to f32, f16, q8_0 and q4_0, then:

- llama.cpp's gguf-py (npm node-llama-cpp, as tests/io/gguf_compare.py installs it) reads the
  file, and every key/value and every tensor's name, shape and type must equal those of the file
  gguf-py writes the way llama.cpp's converter does (conversion/bloom.py's parameters and QKV
  regrouping, base.py's tensor types, _set_vocab_gpt2's token list and types, and gguf-py's own
  SpecialVocab for the merges, special token ids, add_*_token flags and the chat template);
  general.name is the directory's name (the converter's model-card heuristics are not copied).
- F32 and F16 tensors are byte for byte the converter's. Q8_0 and Q4_0 tensors, dequantized by
  gguf-py's quants module, are within each block's quantization bound of the original weights
  (q8_0: d / 2, q4_0: d), and their bytes are exactly docs/QUANTIZATION.md's q8_0 / q4_0 rules
  (recomputed here in numpy) in ggml's block layout; how many blocks also equal gguf-py's own
  quantization (which rounds against the unrounded scale) is printed.
- vkf-run loading each file gives the greedy ids and bit-identical logits of the directory run in
  the same weight format (--weights f32/f16/q8_0/q4_0), and a text prompt through the tokenizer
  written to the file gives the directory's ids and text.
- Written to /dev/stdout (a pipe), the same bytes as the file.
- Refused with a clear message: an output in a missing directory, a full disk (/dev/full), an
  output named .gguf without --format gguf, --to f16 for a checkpoint directory, a GGUF input.

usage: gguf_write_test.py VKF_QUANTIZE VKF_RUN MODEL_DIR NPM_DIR
Exit 77 (skipped) when node, npm, git or numpy is missing or npm cannot install the package.
"""

import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "io"))
import gguf_compare  # noqa: E402  (gguf-py's installation)
from cli_checks import command, fail, failures, run, run_json  # noqa: E402
from gguf_run_test import gguf_name, read_safetensors  # noqa: E402

PROMPT = "1,410,82,37,5,300"
N_PREDICT = 8
TYPES = ("f32", "f16", "q8_0", "q4_0")
CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                 "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def looks_special(token):
    """conversion/base.py's does_token_look_special."""
    return (token in ("<pad>", "<mask>", "<2mass>", "[@BOS@]") or (token.startswith("<|") and token.endswith("|>"))
            or (token.startswith("<\uff5c") and token.endswith("\uff5c>"))
            or (token.startswith("<unused") and token.endswith(">")))


def converter_file(gguf, np, model_dir, out, outtype, pre="gpt-2"):
    """The file llama.cpp's converter writes (f32, f16, q8_0; q4_0: llama-quantize --pure's layout)."""
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        hp = json.load(f)
    n_embed, n_head = hp["hidden_size"], hp["n_head"]
    Q = gguf.GGMLQuantizationType
    qtype = {"f32": Q.F32, "f16": Q.F16, "q8_0": Q.Q8_0, "q4_0": Q.Q4_0}[outtype]
    ftype = {"f32": gguf.LlamaFileType.ALL_F32, "f16": gguf.LlamaFileType.MOSTLY_F16,
             "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0, "q4_0": gguf.LlamaFileType.MOSTLY_Q4_0}[outtype]
    writer = gguf.GGUFWriter(out, "bloom")
    tensors = read_safetensors(np, os.path.join(model_dir, "model.safetensors"))
    writer.add_type(gguf.GGUFType.MODEL)
    writer.add_name(os.path.basename(os.path.normpath(model_dir)))
    writer.add_size_label(gguf.size_label(sum(math.prod(t.shape) for t in tensors.values()), 0, 0, 0))
    # conversion/bloom.py's set_gguf_parameters
    writer.add_context_length(hp.get("seq_length", n_embed))
    writer.add_embedding_length(n_embed)
    writer.add_feed_forward_length(4 * n_embed)
    writer.add_block_count(hp["n_layer"])
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head)
    writer.add_layer_norm_eps(hp["layer_norm_epsilon"])
    writer.add_file_type(ftype)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    # conversion/base.py's _set_vocab_gpt2 (get_vocab_base without transformers: tokenizer.json's
    # vocabulary by id, added tokens CONTROL when special or special-looking).
    with open(os.path.join(model_dir, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    by_id = {i: (t, gguf.TokenType.NORMAL) for t, i in tok["model"]["vocab"].items()}
    for added in tok["added_tokens"]:
        special = added["special"] or looks_special(added["content"])
        by_id[added["id"]] = (added["content"], gguf.TokenType.CONTROL if special else gguf.TokenType.USER_DEFINED)
    entries = [by_id.get(i, ("[PAD%d]" % i, gguf.TokenType.UNUSED)) for i in range(hp["vocab_size"])]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list([t for t, _ in entries])
    writer.add_token_types([int(k) for _, k in entries])
    gguf.SpecialVocab(Path(model_dir), load_merges=True).add_to_gguf(writer, quiet=True)
    for name, data in tensors.items():
        target = gguf_name(name)
        if target.endswith("attn_qkv.weight"):
            w = data.reshape((n_head, 3, n_embed // n_head, n_embed))
            data = np.concatenate([w[:, i, :, :].reshape((-1, n_embed)) for i in range(3)], axis=0)
        elif target.endswith("attn_qkv.bias"):
            b = data.reshape((n_head, 3, n_embed // n_head))
            data = np.concatenate([b[:, i, :].reshape((n_embed,)) for i in range(3)], axis=0)
        data = data.astype(np.float32)
        if data.ndim == 1 or target.endswith("_norm.weight"):
            writer.add_tensor(target, np.ascontiguousarray(data))
        else:
            writer.add_tensor(target, gguf.quants.quantize(data, qtype), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def vkformer_blocks(np, data, qtype):
    """docs/QUANTIZATION.md's q8_0 / q4_0 of fp32 rows, in ggml's block layout (fp16 d, then values)."""
    blocks = data.astype(np.float32).reshape((-1, 32))
    if qtype == "q8_0":
        d = (np.abs(blocks).max(axis=1, keepdims=True) / np.float32(127)).astype(np.float16)
    else:
        extreme = np.take_along_axis(blocks, np.abs(blocks).argmax(axis=1)[:, None], axis=1)
        d = (extreme / np.float32(-8)).astype(np.float16)
    d32 = d.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(d32 == 0, 0, blocks / d32)
    q = np.sign(x) * np.floor(np.abs(x) + np.float32(0.5))  # half away from zero
    if qtype == "q8_0":
        values = np.clip(q, -127, 127).astype(np.int8).view(np.uint8)
    else:
        q = np.clip(q + 8, 0, 15).astype(np.uint8)
        values = q[:, :16] | (q[:, 16:] << np.uint8(4))
    return np.concatenate([d.view(np.uint8), values], axis=1).tobytes()


def field_value(field):
    value = field.contents()
    return [float(v) for v in value] if isinstance(value, list) and field.types[-1].name == "FLOAT32" else value


def compare_file(gguf, np, model_dir, ours_path, theirs_path, outtype):
    ours, theirs = gguf.GGUFReader(ours_path), gguf.GGUFReader(theirs_path)
    what = os.path.basename(ours_path)
    for key in sorted(set(ours.fields) | set(theirs.fields)):
        a, b = ours.fields.get(key), theirs.fields.get(key)
        if a is None or b is None:
            fail("%s: key %s only in %s" % (what, key, "the converter's file" if a is None else "ours"))
            continue
        if [t.name for t in a.types] != [t.name for t in b.types]:
            fail("%s: %s has types %s, the converter's %s" % (what, key, [t.name for t in a.types],
                                                              [t.name for t in b.types]))
        elif field_value(a) != field_value(b):
            fail("%s: %s is %r, the converter's %r" % (what, key, str(field_value(a))[:200],
                                                      str(field_value(b))[:200]))
    if len(ours.fields) != len(theirs.fields):
        fail("%s: %d keys, the converter's %d" % (what, len(ours.fields), len(theirs.fields)))
    source = {gguf_name(n): d for n, d in read_safetensors(np, os.path.join(model_dir, "model.safetensors")).items()}
    theirs_tensors = {t.name: t for t in theirs.tensors}
    same_as_gguf_py = blocks = 0
    for t in ours.tensors:
        ref = theirs_tensors.get(t.name)
        if ref is None:
            fail("%s: tensor %s is not the converter's" % (what, t.name))
            continue
        if (t.tensor_type.name, [int(d) for d in t.shape]) != (ref.tensor_type.name, [int(d) for d in ref.shape]):
            fail("%s: %s is %s %s, the converter's %s %s" % (what, t.name, t.tensor_type.name, list(t.shape),
                                                            ref.tensor_type.name, list(ref.shape)))
            continue
        raw = bytes(t.data.tobytes())
        if t.tensor_type.name in ("F32", "F16"):
            if raw != bytes(ref.data.tobytes()):
                fail("%s: %s bytes differ from the converter's" % (what, t.name))
            continue
        # Quantized: the reference rows are the converter's (QKV regrouped), in fp32.
        original = source_rows(np, source, t.name, ours)
        if raw != vkformer_blocks(np, original, outtype):
            fail("%s: %s bytes are not docs/QUANTIZATION.md's %s" % (what, t.name, outtype))
        deq = gguf.quants.dequantize(t.data, t.tensor_type).reshape(original.shape)
        d = np.frombuffer(raw, dtype=np.uint8).reshape((-1, 34 if outtype == "q8_0" else 18))[:, :2]
        d = np.abs(d.copy().view(np.float16).astype(np.float64)).reshape((-1, 1))
        err = np.abs(deq.astype(np.float64) - original.astype(np.float64)).reshape((-1, 32))
        bound = d * (0.5 if outtype == "q8_0" else 1.0) * (1 + 1e-6) + 1e-30
        if not np.all(err <= bound):
            fail("%s: %s dequantized by gguf-py exceeds the %s bound (worst %g of d)"
                 % (what, t.name, outtype, float(np.max(err / np.maximum(d, 1e-30)))))
        theirs_blocks = np.frombuffer(bytes(ref.data.tobytes()), dtype=np.uint8).reshape(d.shape[0], -1)
        ours_blocks = np.frombuffer(raw, dtype=np.uint8).reshape(d.shape[0], -1)
        same_as_gguf_py += int(np.sum(np.all(theirs_blocks == ours_blocks, axis=1)))
        blocks += d.shape[0]
    if len(ours.tensors) != len(theirs.tensors):
        fail("%s: %d tensors, the converter's %d" % (what, len(ours.tensors), len(theirs.tensors)))
    note = " (%.2f%% of %d blocks byte-equal to gguf-py's quantization)" % (
        100.0 * same_as_gguf_py / blocks, blocks) if blocks else ""
    print("%s: %d keys and %d tensors as the converter writes them%s" % (what, len(ours.fields), len(ours.tensors),
                                                                        note))


def source_rows(np, source, name, ours):
    """The original fp32 rows of a GGUF tensor (BLOOM's QKV regrouped as conversion/bloom.py does)."""
    data = source[name].astype(np.float32)
    if name.endswith("attn_qkv.weight"):
        n_embed = data.shape[1]
        n_head = int(ours.fields["bloom.attention.head_count"].contents())
        w = data.reshape((n_head, 3, n_embed // n_head, n_embed))
        data = np.concatenate([w[:, i, :, :].reshape((-1, n_embed)) for i in range(3)], axis=0)
    return data


def greedy(vkf_run, model, weights, logits):
    return run_json(vkf_run, ["--model", model, "--prompt-ids", PROMPT, "--n-predict", str(N_PREDICT), "--kv", "f32",
                              "--weights", weights, "--logits-out", logits])


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    vkf_quantize, vkf_run, model_dir, npm_dir = sys.argv[1], sys.argv[2], sys.argv[3], os.path.abspath(sys.argv[4])
    gguf, np = gguf_compare.gguf_modules(npm_dir)

    with tempfile.TemporaryDirectory(prefix="vkf_gguf_write_") as tmp:
        # The same model with tokenizer_config.json's special tokens, add_*_token and a chat template.
        chat_dir = os.path.join(tmp, "kjv-bloom-chat")
        os.makedirs(chat_dir)
        for name in ("config.json", "tokenizer.json", "model.safetensors"):
            os.symlink(os.path.abspath(os.path.join(model_dir, name)), os.path.join(chat_dir, name))
        with open(os.path.join(chat_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump({"bos_token": "<s>", "eos_token": {"content": "</s>"}, "pad_token": "<pad>",
                       "unk_token": "<unk>", "add_bos_token": False, "add_eos_token": False,
                       "chat_template": CHAT_TEMPLATE}, f)
        # And with BLOOM's pre-tokenizer (Split + ByteLevel): tokenizer.ggml.pre "bloom".
        bloom_dir = os.path.join(tmp, "kjv-bloom-split")
        os.makedirs(bloom_dir)
        for name in ("config.json", "model.safetensors"):
            os.symlink(os.path.abspath(os.path.join(model_dir, name)), os.path.join(bloom_dir, name))
        os.symlink(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "text", "data", "bloom_style.json"),
                   os.path.join(bloom_dir, "tokenizer.json"))
        for source, types, pre in ((model_dir, TYPES, "gpt-2"), (chat_dir, ("f16",), "gpt-2"),
                                   (bloom_dir, ("f16",), "bloom")):
            for outtype in types:
                ours = os.path.join(tmp, "%s-%s.gguf" % (os.path.basename(source), outtype))
                proc = run(vkf_quantize, ["--model", source, "--to", outtype, "--format", "gguf", "--out", ours])
                if proc.returncode != 0:
                    fail("vkf-quantize --to %s --format gguf exited %d: %s" % (outtype, proc.returncode, proc.stderr))
                    continue
                if "100%" not in proc.stderr:
                    fail("vkf-quantize --format gguf printed no progress: %r" % proc.stderr)
                theirs = os.path.join(tmp, "converter-%s-%s.gguf" % (os.path.basename(source), outtype))
                converter_file(gguf, np, source, theirs, outtype, pre)
                compare_file(gguf, np, source, ours, theirs, outtype)
                if source == chat_dir:
                    template = gguf.GGUFReader(ours).fields.get("tokenizer.chat_template")
                    if template is None or template.contents() != CHAT_TEMPLATE:
                        fail("the chat template was not written")
                    continue
                if source != model_dir:
                    continue  # (bloom_style.json's 291 tokens cannot decode what kjv-bloom generates)
                if outtype == "f16":
                    # A text prompt through the tokenizer written to the file: the directory's ids and text.
                    text = ["--prompt", "In the beginning, God created", "--n-predict", str(N_PREDICT), "--kv", "f32"]
                    a, b = run_json(vkf_run, ["--model", ours] + text), run_json(vkf_run, ["--model", source] + text)
                    if a is not None and b is not None:
                        for key in ("prompt_ids", "generated_ids", "text"):
                            if a.get(key) != b.get(key):
                                fail("--prompt (%s): GGUF %s %r, directory %r" % (pre, key, a.get(key), b.get(key)))
                        print("--prompt through the GGUF's %s tokenizer: ids %s" % (pre, a.get("prompt_ids")))
                # vkformer on the written file: the directory's ids and identical logits.
                a_path, b_path = os.path.join(tmp, "gguf.npy"), os.path.join(tmp, "dir.npy")
                a = greedy(vkf_run, ours, outtype, a_path)
                b = greedy(vkf_run, model_dir, outtype, b_path)
                if a is None or b is None:
                    continue
                la, lb = np.load(a_path), np.load(b_path)
                if a.get("generated_ids") != b.get("generated_ids") or not np.array_equal(la, lb):
                    fail("%s: GGUF ids %r, directory %r; logits equal: %s" % (
                        outtype, a.get("generated_ids"), b.get("generated_ids"),
                        la.shape == lb.shape and np.array_equal(la, lb)))
                else:
                    print("vkf-run --weights %s: GGUF ids %s, logits identical to the directory's" % (
                        outtype, a.get("generated_ids")))

        # Written as a stream (a pipe): the same bytes as the file, nothing else on stdout.
        piped = subprocess.run(command(vkf_quantize, ["--model", model_dir, "--to", "q4_0", "--format", "gguf",
                                                      "--out", "/dev/stdout"]), capture_output=True)
        with open(os.path.join(tmp, "kjv-bloom-q4_0.gguf"), "rb") as f:
            if piped.returncode != 0 or piped.stdout != f.read():
                fail("vkf-quantize --out /dev/stdout: exit %d, %d bytes differing from the file's"
                     % (piped.returncode, len(piped.stdout)))

        # Clear refusals.
        refusals = (
            (["--to", "f16", "--format", "gguf", "--out", os.path.join(tmp, "missing", "x.gguf")],
             os.path.join(tmp, "missing")),
            (["--to", "q8_0", "--format", "gguf", "--out", "/dev/full"], "No space left on device"),
            (["--to", "q8_0", "--out", os.path.join(tmp, "y.gguf")], "add --format gguf"),
            (["--to", "f16", "--out", os.path.join(tmp, "dir")], "--to f32 and f16 need --format gguf"),
            (["--to", "f16", "--format", "gguf", "--out", tmp], "is a directory"),
            (["--to", "f16", "--format", "gguf", "--out", os.path.join(tmp, "z.gguf"), "--model",
              os.path.join(tmp, "kjv-bloom-f16.gguf")], "a GGUF file"),
        )
        for args, text in refusals:
            proc = run(vkf_quantize, ["--model", model_dir] + args)
            if proc.returncode == 0 or text not in proc.stderr or "Traceback" in proc.stderr:
                fail("vkf-quantize %s: exit %d, expected a message naming %r: %r"
                     % (" ".join(args), proc.returncode, text, proc.stderr.strip()[-500:]))
        if os.path.exists(os.path.join(tmp, "dir")) or os.path.exists(os.path.join(tmp, "y.gguf")):
            fail("a refused vkf-quantize left output behind")

    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
