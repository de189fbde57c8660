#!/usr/bin/env python3
"""vkf-run --model FILE.gguf against the safetensors checkpoint it was converted from.

models/kjv-bloom (config.json + model.safetensors) is converted to GGUF with llama.cpp's gguf-py
(node-llama-cpp from npm, as tests/io/gguf_compare.py installs it) the way llama.cpp's converter
does (conversion/bloom.py and gguf-py's tensor map: names, the fused QKV reordered to [q | k | v],
matrices F16 and 1-D tensors F32, the same metadata keys; the converter itself needs PyTorch,
which is not assumed). vkf-run --check on the GGUF must generate the same greedy ids as on the
directory, with logits within the bound of tests/apps/run_cli_test.py, and in the same weight
format the logits must be identical; a text prompt tokenized with the tokenizer translated from
tokenizer.ggml.* must generate what tokenizer.json does. Files whose matrices gguf-py quantized to Q8_0 or Q4_0 (llama-quantize --pure's
layout) are read as vkformer's q8_0/q4_0, and Q4_1, Q5_0 and Q5_1 files as stored, and each must
give the logits of the same model on gguf-py's dequantized weights. Refused by name: another
architecture, one Q8_0 matrix among F16 ones, TQ2_0 and MXFP4 (types without a kernel).

vkf-perplexity --model FILE.gguf must score models/kjv-bloom/heldout.txt as on the directory.

The C API (tests/capi/test_capi_gguf.c) loads it by path and from a descriptor window of a file
holding it at an unaligned offset between other bytes, and must generate vkf-run's ids.

vkf-tokenize --tokenizer FILE.gguf must give tokenizer.json's ids for the whole held-out text, and
with tokenizer.ggml.add_bos_token / add_eos_token set, the same ids between BOS and EOS.

usage: gguf_run_test.py VKF_RUN MODEL_DIR NPM_DIR VKF_PERPLEXITY TEST_CAPI_GGUF VKF_TOKENIZE
Exit 77 (skipped) when node, npm, git or numpy is missing or npm cannot install the package.
"""

import json
import os
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "io"))
import gguf_compare  # noqa: E402  (gguf-py's installation)
from cli_checks import fail, failures, run, run_json  # noqa: E402

PROMPT = "1,410,82,37,5,300"
N_PREDICT = 8
BOUND = 1e-4  # run_cli_test.py's bound for an fp32 KV cache
# Quantized kernels against dense f32 ones on the same (exactly dequantized) weights: only the
# order of the sums differs; a repacking mistake is garbage, far above this.
Q_BOUND = 1e-3

HF_TO_GGUF = {
    "word_embeddings.weight": "token_embd.weight",
    "word_embeddings_layernorm.weight": "token_embd_norm.weight",
    "word_embeddings_layernorm.bias": "token_embd_norm.bias",
    "ln_f.weight": "output_norm.weight",
    "ln_f.bias": "output_norm.bias",
    "lm_head.weight": "output.weight",
}
BLOCK = {
    "input_layernorm": "attn_norm", "self_attention.query_key_value": "attn_qkv",
    "self_attention.dense": "attn_output", "post_attention_layernorm": "ffn_norm",
    "mlp.dense_h_to_4h": "ffn_up", "mlp.dense_4h_to_h": "ffn_down",
}


def read_safetensors(np, path):
    dtypes = {"F16": np.float16, "F32": np.float32}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype=dtypes[entry["dtype"]]).reshape(entry["shape"])
    return tensors


def gguf_name(name):
    name = name[len("transformer."):] if name.startswith("transformer.") else name
    if name in HF_TO_GGUF:
        return HF_TO_GGUF[name]
    parts = name.split(".")
    layer, rest, suffix = parts[1], ".".join(parts[2:-1]), parts[-1]
    return "blk.%s.%s.%s" % (layer, BLOCK[rest], suffix)


def write_safetensors(path, tensors):
    """F32 tensors as a safetensors file (the format's header, then the bytes back to back)."""
    header, offset, blobs = {}, 0, []
    for name, data in tensors.items():
        blob = data.astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(data.shape), "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def dequantized_directory(gguf, np, model_dir, out, qtype):
    """The model on the weights a GGUF of qtype holds: every matrix through gguf-py's quantize and
    dequantize (llama.cpp's own Python port of ggml's), as F32 safetensors. Rows are quantized
    one by one, so BLOOM's QKV rows quantize the same in either order."""
    os.makedirs(out)
    tensors = {}
    for name, data in read_safetensors(np, os.path.join(model_dir, "model.safetensors")).items():
        data = data.astype(np.float32)
        if data.ndim == 2:
            data = gguf.quants.dequantize(gguf.quants.quantize(data, qtype), qtype).reshape(data.shape)
        tensors[name] = data
    write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    config["torch_dtype"] = "float32"
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f)


def convert(gguf, np, model_dir, out, arch="bloom", quantize_qkv=False, quant=None, add_special=None):
    """conversion/bloom.py's BloomModel, written with gguf-py; with `quant` (a
    GGMLQuantizationType) every matrix quantized by gguf-py, as llama-quantize --pure does."""
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        hp = json.load(f)
    n_embed, n_head = hp["hidden_size"], hp["n_head"]
    writer = gguf.GGUFWriter(out, arch)
    writer.add_context_length(hp.get("seq_length", n_embed))
    writer.add_embedding_length(n_embed)
    writer.add_feed_forward_length(4 * n_embed)
    writer.add_block_count(hp["n_layer"])
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head)
    writer.add_layer_norm_eps(hp["layer_norm_epsilon"])
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_bos_token_id(hp["bos_token_id"])
    writer.add_eos_token_id(hp["eos_token_id"])
    # conversion/base.py's _set_vocab_gpt2: tokens by id ([PADn] fillers up to vocab_size),
    # special added tokens as CONTROL, merges as "a b"; kjv-bloom's ByteLevel is GPT-2's.
    with open(os.path.join(model_dir, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    by_id = {i: (t, gguf.TokenType.NORMAL) for t, i in tok["model"]["vocab"].items()}
    for added in tok["added_tokens"]:
        by_id[added["id"]] = (added["content"], gguf.TokenType.CONTROL if added["special"]
                              else gguf.TokenType.USER_DEFINED)
    entries = [by_id.get(i, ("[PAD%d]" % i, gguf.TokenType.UNUSED)) for i in range(hp["vocab_size"])]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list([t for t, _ in entries])
    writer.add_token_types([int(k) for _, k in entries])
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]])
    # gguf-py's SpecialVocab writes these from tokenizer_config.json's add_bos_token/add_eos_token.
    for key, value in (add_special or {}).items():
        getattr(writer, "add_add_%s_token" % key)(value)
    for name, data in read_safetensors(np, os.path.join(model_dir, "model.safetensors")).items():
        target = gguf_name(name)
        if target.endswith("attn_qkv.weight"):
            w = data.reshape((n_head, 3, n_embed // n_head, n_embed))
            data = np.concatenate([w[:, i, :, :].reshape((-1, n_embed)) for i in range(3)], axis=0)
        elif target.endswith("attn_qkv.bias"):
            b = data.reshape((n_head, 3, n_embed // n_head))
            data = np.concatenate([b[:, i, :].reshape((n_embed,)) for i in range(3)], axis=0)
        # The converter's f16 output keeps 1-D tensors (norms, biases) in F32.
        data = data.astype(np.float32) if data.ndim == 1 else data.astype(np.float16)
        if quant is not None and data.ndim == 2:
            writer.add_tensor(target, gguf.quants.quantize(data.astype(np.float32), quant), raw_dtype=quant)
        elif quantize_qkv and target.endswith("attn_qkv.weight"):
            q = gguf.GGMLQuantizationType.Q8_0
            writer.add_tensor(target, gguf.quants.quantize(data.astype(np.float32), q), raw_dtype=q)
        else:
            writer.add_tensor(target, np.ascontiguousarray(data))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def greedy(vkf_run, model, tokenizer, weights, logits):
    """weights None: the format the file holds (a type vkf-run cannot quantize to, read as stored)."""
    args = ["--model", model, "--prompt-ids", PROMPT, "--n-predict", str(N_PREDICT), "--check", "--kv", "f32",
            "--logits-out", logits] + (["--weights", weights] if weights else [])
    if tokenizer:
        args += ["--tokenizer", tokenizer]
    return run_json(vkf_run, args)


def main():
    if len(sys.argv) != 7:
        print(__doc__)
        return 2
    vkf_run, model_dir, npm_dir = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
    vkf_perplexity, capi_gguf, vkf_tokenize = sys.argv[4], sys.argv[5], sys.argv[6]
    gguf, np = gguf_compare.gguf_modules(npm_dir)

    with tempfile.TemporaryDirectory(prefix="vkf_gguf_run_") as tmp:
        path = os.path.join(tmp, "kjv-bloom-f16.gguf")
        convert(gguf, np, model_dir, path)
        tokenizer = os.path.join(model_dir, "tokenizer.json")
        f32_ids = None
        for weights in ("f32", "f16"):
            ours = greedy(vkf_run, path, tokenizer, weights, os.path.join(tmp, "gguf-%s.npy" % weights))
            theirs = greedy(vkf_run, model_dir, None, weights, os.path.join(tmp, "dir-%s.npy" % weights))
            if ours is None or theirs is None:
                continue
            if ours.get("generated_ids") != theirs.get("generated_ids") or len(ours["generated_ids"]) != N_PREDICT:
                fail("--weights %s: GGUF generated %r, the directory %r" % (weights, ours.get("generated_ids"),
                                                                          theirs.get("generated_ids")))
            error = ours.get("check", {}).get("max_rel_logit_error")
            if error is None or not error < BOUND:
                fail("--weights %s: GGUF --check error %r, expected < %g" % (weights, error, BOUND))
            a = np.load(os.path.join(tmp, "gguf-%s.npy" % weights))
            b = np.load(os.path.join(tmp, "dir-%s.npy" % weights))
            if a.shape != b.shape or not np.array_equal(a, b):
                fail("--weights %s: GGUF logits differ from the directory's (max |diff| %g)"
                     % (weights, float(np.max(np.abs(a - b))) if a.shape == b.shape else float("nan")))
            print("--weights %s: ids %s, check error %s" % (weights, ours.get("generated_ids"), error))
            if weights == "f32":
                f32_ids = ours.get("generated_ids")

        # The tokenizer from tokenizer.ggml.*: the same text generated as with tokenizer.json.
        text_args = ["--prompt", "In the beginning God created", "--n-predict", str(N_PREDICT), "--kv", "f32"]
        ours = run_json(vkf_run, ["--model", path] + text_args)
        theirs = run_json(vkf_run, ["--model", model_dir] + text_args)
        if ours is not None and theirs is not None:
            for key in ("prompt_ids", "generated_ids", "text"):
                if key in theirs and ours.get(key) != theirs.get(key):
                    fail("--prompt: GGUF's %s %r, the directory's %r" % (key, ours.get(key), theirs.get(key)))
            print("--prompt: %s" % json.dumps({k: theirs.get(k) for k in ("generated_ids", "text") if k in theirs}))

        # The GGUF's tokenizer on the whole held-out text, and llama.cpp's add_bos/add_eos keys.
        heldout = os.path.join(model_dir, "heldout.txt")
        ids = {}
        special = os.path.join(tmp, "add-special.gguf")
        convert(gguf, np, model_dir, special, add_special={"bos": True, "eos": True})
        for name, source in (("tokenizer.json", tokenizer), ("GGUF", path), ("GGUF add_bos/eos", special)):
            proc = run(vkf_tokenize, ["--tokenizer", source, "--file", heldout])
            if proc.returncode != 0:
                fail("vkf-tokenize --tokenizer %s: exit %d: %s" % (name, proc.returncode, proc.stderr))
            ids[name] = proc.stdout.split()
        if ids["GGUF"] != ids["tokenizer.json"] or len(ids["GGUF"]) < 1000:
            fail("held-out text: the GGUF's %d ids differ from tokenizer.json's %d" % (len(ids["GGUF"]),
                                                                                       len(ids["tokenizer.json"])))
        with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
            hp = json.load(f)
        framed = [str(hp["bos_token_id"])] + ids["tokenizer.json"] + [str(hp["eos_token_id"])]
        if ids["GGUF add_bos/eos"] != framed:
            fail("add_bos_token/add_eos_token: %r... not BOS, the text's ids, EOS" % ids["GGUF add_bos/eos"][:5])
        print("held-out text: %d ids as tokenizer.json's; with add_bos/add_eos framed by %s and %s"
              % (len(ids["GGUF"]), framed[0], framed[-1]))

        # The C API, by path and from a descriptor window (an Android asset inside its APK).
        with open(path, "rb") as f:
            gguf_bytes = f.read()
        wrapped = os.path.join(tmp, "wrapped.bin")
        offset = 4096 + 123
        with open(wrapped, "wb") as f:
            f.write(b"\xa5" * offset + gguf_bytes + b"\x5a" * 1000)
        proc = run(capi_gguf, [path, wrapped, str(offset), str(len(gguf_bytes))])
        expected = "ids: " + ",".join(str(i) for i in (f32_ids or []))
        if proc.returncode != 0 or expected not in proc.stdout or f32_ids is None:
            fail("test_capi_gguf: exit %d, expected %r, stdout %r, stderr %r"
                 % (proc.returncode, expected, proc.stdout, proc.stderr))
        print("C API: %s" % proc.stdout.strip().replace("\n", "; "))

        # vkf-perplexity: the same scores from the GGUF (its tokenizer too) as from the directory.
        ppl_args = ["--file", os.path.join(model_dir, "heldout.txt"), "--max-tokens", "96", "--ctx", "32",
                    "--weights", "f16"]
        ours = run_json(vkf_perplexity, ["--model", path] + ppl_args)
        theirs = run_json(vkf_perplexity, ["--model", model_dir] + ppl_args)
        if ours is not None and theirs is not None:
            scores = [[{k: v for k, v in row.items() if k != "seconds"} for row in r.get("results", [])]
                      for r in (ours, theirs)]
            if scores[0] != scores[1] or not scores[1] or ours.get("tokens") != theirs.get("tokens"):
                fail("vkf-perplexity: GGUF %r, the directory %r" % (scores[0], scores[1]))
            print("vkf-perplexity: %s" % json.dumps(scores[1]))

        llama = os.path.join(tmp, "llama.gguf")
        convert(gguf, np, model_dir, llama, arch="llama")
        proc = run(vkf_run, ["--model", llama, "--prompt-ids", PROMPT, "--tokenizer", tokenizer])
        if proc.returncode == 0 or "GGUF architecture 'llama' is not an ALiBi family vkformer runs" not in proc.stderr:
            fail("architecture llama: exit %d, stderr %r" % (proc.returncode, proc.stderr))
        quant = os.path.join(tmp, "q8.gguf")
        convert(gguf, np, model_dir, quant, quantize_qkv=True)
        proc = run(vkf_run, ["--model", quant, "--prompt-ids", PROMPT, "--tokenizer", tokenizer])
        if proc.returncode == 0 or "but 'blk.0.attn_qkv.weight' is Q8_0: vkformer loads the matrices" not in proc.stderr:
            fail("one Q8_0 tensor among F16 ones: exit %d, stderr %r" % (proc.returncode, proc.stderr))

        # Q8_0 and Q4_0 blocks read as vkformer's q8_0/q4_0, Q4_1, Q5_0 and Q5_1 blocks as stored:
        # the logits those weights give, within the bound of the same model in f32 on gguf-py's
        # dequantized weights, the same greedy ids.
        for qname in ("Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"):
            qtype = getattr(gguf.GGMLQuantizationType, qname)
            qpath = os.path.join(tmp, "kjv-bloom-%s.gguf" % qname.lower())
            convert(gguf, np, model_dir, qpath, quant=qtype)
            dq_dir = os.path.join(tmp, "dequantized-%s" % qname.lower())
            dequantized_directory(gguf, np, model_dir, dq_dir, qtype)
            weights = qname.lower() if qname in ("Q8_0", "Q4_0") else None
            ours = greedy(vkf_run, qpath, tokenizer, weights, os.path.join(tmp, "q.npy"))
            theirs = greedy(vkf_run, dq_dir, tokenizer, "f32", os.path.join(tmp, "dq.npy"))
            if ours is None or theirs is None:
                continue
            if ours.get("generated_ids") != theirs.get("generated_ids"):
                fail("%s: GGUF generated %r, the dequantized weights %r" % (qname, ours.get("generated_ids"),
                                                                          theirs.get("generated_ids")))
            a, b = np.load(os.path.join(tmp, "q.npy")), np.load(os.path.join(tmp, "dq.npy"))
            error = float(np.max(np.abs(a - b)) / np.max(np.abs(b))) if a.shape == b.shape else float("inf")
            if not error < Q_BOUND:
                fail("%s: logits differ from the dequantized weights' by %g of their largest, expected < %g"
                     % (qname, error, Q_BOUND))
            print("%s: ids %s, logits within %.3g of the dequantized weights'" % (qname, ours.get("generated_ids"),
                                                                                 error))
        for qname, refused in (("TQ2_0", "TQ2_0"), ("MXFP4", "MXFP4")):
            other = os.path.join(tmp, "%s.gguf" % qname.lower())
            convert(gguf, np, model_dir, other, quant=getattr(gguf.GGMLQuantizationType, qname))
            proc = run(vkf_run, ["--model", other, "--prompt-ids", PROMPT, "--tokenizer", tokenizer])
            if proc.returncode == 0 or ("is of type %s, which vkformer does not read" % refused) not in proc.stderr:
                fail("%s: exit %d, stderr %r" % (qname, proc.returncode, proc.stderr))

    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
