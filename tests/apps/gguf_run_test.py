#!/usr/bin/env python3
"""vkf-run --model FILE.gguf against the safetensors checkpoint it was converted from.

models/kjv-bloom (config.json + model.safetensors) is converted to GGUF with llama.cpp's gguf-py
(node-llama-cpp from npm, as tests/io/gguf_compare.py installs it) the way llama.cpp's converter
does (conversion/bloom.py and gguf-py's tensor map: names, the fused QKV reordered to [q | k | v],
matrices F16 and 1-D tensors F32, the same metadata keys; the converter itself needs PyTorch,
which is not assumed). vkf-run --check on the GGUF must generate the same greedy ids as on the
directory, with logits within the bound of tests/apps/run_cli_test.py, and in the same weight
format the logits must be identical; a text prompt tokenized with the tokenizer translated from
tokenizer.ggml.* must generate what tokenizer.json does. Refused by name: another architecture, a quantized tensor.

usage: gguf_run_test.py VKF_RUN MODEL_DIR NPM_DIR
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


def convert(gguf, np, model_dir, out, arch="bloom", quantize_qkv=False):
    """conversion/bloom.py's BloomModel, written with gguf-py."""
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
        if quantize_qkv and target.endswith("attn_qkv.weight"):
            q = gguf.GGMLQuantizationType.Q8_0
            writer.add_tensor(target, gguf.quants.quantize(data.astype(np.float32), q), raw_dtype=q)
        else:
            writer.add_tensor(target, np.ascontiguousarray(data))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def greedy(vkf_run, model, tokenizer, weights, logits):
    args = ["--model", model, "--prompt-ids", PROMPT, "--n-predict", str(N_PREDICT), "--check", "--kv", "f32",
            "--weights", weights, "--logits-out", logits]
    if tokenizer:
        args += ["--tokenizer", tokenizer]
    return run_json(vkf_run, args)


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    vkf_run, model_dir, npm_dir = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
    for program in ("node", "npm", "git"):
        if gguf_compare.shutil.which(program) is None:
            gguf_compare.skip("%s is not installed" % program)
    try:
        import numpy as np
    except ImportError:
        gguf_compare.skip("numpy is not installed for %s" % sys.executable)
    sys.path.insert(0, gguf_compare.gguf_py_dir(npm_dir))
    import gguf

    with tempfile.TemporaryDirectory(prefix="vkf_gguf_run_") as tmp:
        path = os.path.join(tmp, "kjv-bloom-f16.gguf")
        convert(gguf, np, model_dir, path)
        tokenizer = os.path.join(model_dir, "tokenizer.json")
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

        # The tokenizer from tokenizer.ggml.*: the same text generated as with tokenizer.json.
        text_args = ["--prompt", "In the beginning God created", "--n-predict", str(N_PREDICT), "--kv", "f32"]
        ours = run_json(vkf_run, ["--model", path] + text_args)
        theirs = run_json(vkf_run, ["--model", model_dir] + text_args)
        if ours is not None and theirs is not None:
            for key in ("prompt_ids", "generated_ids", "text"):
                if key in theirs and ours.get(key) != theirs.get(key):
                    fail("--prompt: GGUF's %s %r, the directory's %r" % (key, ours.get(key), theirs.get(key)))
            print("--prompt: %s" % json.dumps({k: theirs.get(k) for k in ("generated_ids", "text") if k in theirs}))

        llama = os.path.join(tmp, "llama.gguf")
        convert(gguf, np, model_dir, llama, arch="llama")
        proc = run(vkf_run, ["--model", llama, "--prompt-ids", PROMPT, "--tokenizer", tokenizer])
        if proc.returncode == 0 or "GGUF architecture 'llama' is not an ALiBi family vkformer runs" not in proc.stderr:
            fail("architecture llama: exit %d, stderr %r" % (proc.returncode, proc.stderr))
        quant = os.path.join(tmp, "q8.gguf")
        convert(gguf, np, model_dir, quant, quantize_qkv=True)
        proc = run(vkf_run, ["--model", quant, "--prompt-ids", PROMPT, "--tokenizer", tokenizer])
        if proc.returncode == 0 or "tensor 'blk.0.attn_qkv.weight' is of type Q8_0" not in proc.stderr:
            fail("Q8_0 tensor: exit %d, stderr %r" % (proc.returncode, proc.stderr))
        leftovers = [n for n in os.listdir(tempfile.gettempdir()) if n.startswith("vkf-gguf-")]
        if leftovers:
            print("note: %s in the temporary directory (other runs?)" % leftovers)

    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
