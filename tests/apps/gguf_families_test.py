#!/usr/bin/env python3
"""Every ALiBi family llama.cpp converts, from GGUF: vkf-run --model FILE.gguf against the directory.

vkf-make-checkpoint writes a small random checkpoint of each family in its Hugging Face layout;
it is converted to GGUF as llama.cpp's converter does (conversion/mpt.py, baichuan.py, jais.py:
the metadata keys they write, gguf-py's own TensorNameMap for the names, their row permutations,
transposes and muP scalings),
with llama.cpp's gguf-py from npm's node-llama-cpp (as tests/io/gguf_compare.py installs it).
The converter script itself imports PyTorch, which is not assumed; each transformation below is
the converter's, line for line, in numpy.

For each family, in f32 and in f16 (matrices F16, 1-D tensors F32, as the converter's default
--outtype): vkf-run --check on the GGUF generates the directory's greedy ids, its logits within
the bound of the double-precision reference, and identical to the directory's logits (the same
model in the same weight format); with every matrix quantized to Q8_0 by gguf-py, within the
reference bound and near the f32 directory's logits. A Baichuan of 32 blocks (Baichuan-7B, rotary positions in
llama.cpp) is refused by name, as is an architecture vkformer lacks. Refact (conversion/refact.py,
from the Hugging Face layout vkf-make-checkpoint writes) is also run by llama.cpp itself:
gguf_families_llama.py.

jina-bert-v2 (conversion/bert.py, its vocabulary and gguf-py's SpecialVocab on tests/text/data's
bert_wordpiece.json): vkf-embed --model FILE.gguf gives every token state the directory gives, on
ids and on a text the GGUF's WordPiece tokenizer (with the [CLS] and [SEP] that
tokenizer.ggml.add_bos_token and add_eos_token ask for) must split as tokenizer.json does.

usage: gguf_families_test.py VKF_RUN VKF_MAKE_CHECKPOINT NPM_DIR VKF_EMBED BERT_TOKENIZER_JSON
Exit 77 (skipped) when node, npm, git or numpy is missing or npm cannot install the package.
"""

import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "io"))
import gguf_compare  # noqa: E402  (gguf-py's installation)
from cli_checks import fail, failures, run, run_json  # noqa: E402
from gguf_run_test import read_safetensors  # noqa: E402
import gguf_families_llama as llama_check  # noqa: E402  (Refact against llama.cpp itself)

PROMPT = "3,1,4,1,5,9,2"
N_PREDICT = 6
BOUND = 2e-3  # families_cli_test.py's bound against the reference

# name -> (family flag, vkf-make-checkpoint options). Every setting the GGUF keys or tensors can
# state; MPT's softmax_scale, logit_scale and window have no key, and llama.cpp runs without them.
CASES = {
    "mpt": ("mpt", ["--bias", "--qk-ln", "--kv-heads", "2", "--clip-qkv", "4", "--alibi-bias-max", "6"]),
    "mpt-no-bias": ("mpt", []),
    "baichuan": ("baichuan", []),
    "jais": ("jais", []),
    "refact": ("refact", []),
}
Q8_APART = 2e-2  # Q8_0's rounding of random weights, relative to the largest logit
BERT_TEXT = "Hello, World! The unaffable runner's running; hello again."
# The converter multiplies Jais' embedding and LM head by its muP scales, which the directory's
# model applies to the activations instead: the same model, rounded apart (relative to the
# largest logit; the f16 file rounds the scaled weights to f16).
SCALED = {"jais": {"f32": 1e-5, "f16": 1e-3}}


def tensor_map(gguf, arch, n_blocks):
    return gguf.get_tensor_name_map(arch, n_blocks)


def mpt(gguf, np, hp, tensors, writer):
    """conversion/mpt.py's MPTModel."""
    writer.add_context_length(hp["max_seq_len"])
    writer.add_embedding_length(hp["d_model"])
    writer.add_block_count(hp["n_layers"])
    writer.add_feed_forward_length(4 * hp["d_model"])
    writer.add_head_count(hp["n_heads"])
    if hp["attn_config"].get("kv_n_heads"):
        writer.add_head_count_kv(hp["attn_config"]["kv_n_heads"])
    writer.add_layer_norm_eps(1e-5)
    if hp["attn_config"]["clip_qkv"] is not None:
        writer.add_clamp_kqv(hp["attn_config"]["clip_qkv"])
    writer.add_max_alibi_bias(hp["attn_config"]["alibi_bias_max"] if hp["attn_config"]["alibi"] else 0.0)
    names = tensor_map(gguf, gguf.MODEL_ARCH.MPT, hp["n_layers"])
    for name, data in tensors.items():
        yield names.get_name(name, try_suffixes=(".weight", ".bias")), data


def reverse_hf_permute(w, n_head):
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def baichuan(gguf, np, hp, tensors, writer):
    """conversion/baichuan.py's BaichuanModel on base.py's TextModel.set_gguf_parameters."""
    writer.add_block_count(hp["num_hidden_layers"])
    writer.add_context_length(hp["model_max_length"])
    writer.add_embedding_length(hp["hidden_size"])
    writer.add_feed_forward_length(hp["intermediate_size"])
    writer.add_head_count(hp["num_attention_heads"])
    writer.add_layer_norm_rms_eps(hp["rms_norm_eps"])
    writer.add_tensor_data_layout("Meta AI original pth")
    writer.add_rope_dimension_count(hp["hidden_size"] // hp["num_attention_heads"])
    n_head = hp["num_attention_heads"]
    names = tensor_map(gguf, gguf.MODEL_ARCH.BAICHUAN, hp["num_hidden_layers"])
    for name, data in tensors.items():
        if name.endswith("self_attn.W_pack.weight"):
            bid = name.split(".")[2]
            r = data.shape[0] // 3
            yield "blk.%s.attn_q.weight" % bid, reverse_hf_permute(data[:r], n_head)
            yield "blk.%s.attn_k.weight" % bid, reverse_hf_permute(data[r:2 * r], n_head)
            yield "blk.%s.attn_v.weight" % bid, data[2 * r:]
        else:
            yield names.get_name(name, try_suffixes=(".weight", ".bias")), data


def jais(gguf, np, hp, tensors, writer):
    """conversion/jais.py's JaisModel. vkf-make-checkpoint's Jais ties its LM head to wte and
    stores no lm_head.weight; transformers' state_dict of the tied model (what the converter
    reads) holds it, and llama.cpp's jais needs it."""
    embeddings_scale = hp["mup_embeddings_scale"]
    width_scale = hp["mup_output_alpha"] * hp["mup_width_scale"]
    max_alibi_bias = 8.0
    writer.add_block_count(hp["n_layer"])
    writer.add_context_length(hp["n_positions"])
    writer.add_embedding_length(hp["n_embd"])
    writer.add_feed_forward_length(hp["n_inner"])
    writer.add_head_count(hp["n_head"])
    writer.add_layer_norm_eps(hp["layer_norm_epsilon"])
    if "lm_head.weight" not in tensors:
        tensors = dict(tensors, **{"lm_head.weight": tensors["transformer.wte.weight"]})
    names = tensor_map(gguf, gguf.MODEL_ARCH.JAIS, hp["n_layer"])
    for name, data in tensors.items():
        if name.endswith(".attn.bias") or name.endswith("relative_pe.slopes"):
            continue
        data = data.astype(np.float32)
        if name.endswith((".c_attn.weight", ".c_proj.weight", ".c_fc.weight", ".c_fc2.weight")):
            data = data.transpose(1, 0)
        new_name = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if new_name == "token_embd.weight":
            data = data * np.float32(embeddings_scale)
        elif new_name == "output.weight":
            data = data * np.float32(width_scale)
        yield new_name, data
    writer.add_max_alibi_bias(max_alibi_bias)


def refact(gguf, np, hp, tensors, writer, swap_kv=False):
    """conversion/refact.py's RefactModel: attn.kv split into attn_k and attn_v (one head),
    mlp.gate_up_proj into ffn_gate and ffn_up. Its set_vocab writes the model's BPE vocabulary,
    which a random checkpoint has not: a `none` tokenizer of vocab_size tokens instead, so that
    llama.cpp loads the file. `swap_kv` swaps K and V (a broken file, for the negative control)."""
    hidden_dim = hp["n_embd"]
    inner_dim = 4 * hidden_dim
    hidden_dim = int(2 * inner_dim / 3)
    multiple_of = 256
    ff_dim = multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)
    writer.add_context_length(hp["n_positions"])
    writer.add_embedding_length(hp["n_embd"])
    writer.add_feed_forward_length(ff_dim)
    writer.add_block_count(hp["n_layer"])
    writer.add_head_count(hp["n_head"])
    writer.add_head_count_kv(1)
    writer.add_layer_norm_rms_eps(hp["layer_norm_epsilon"])
    writer.add_tokenizer_model("none")
    writer.add_vocab_size(hp["vocab_size"])
    n_head_kv, head_dim = 1, hp["n_embd"] // hp["n_head"]
    names = tensor_map(gguf, gguf.MODEL_ARCH.REFACT, hp["n_layer"])
    for name, data in tensors.items():
        bid = name.split(".")[2] if name.startswith("transformer.h.") else None
        if name == "transformer.h.%s.attn.kv.weight" % bid:
            k, v = data[:n_head_kv * head_dim], data[n_head_kv * head_dim:]
            yield "blk.%s.attn_k.weight" % bid, v if swap_kv else k
            yield "blk.%s.attn_v.weight" % bid, k if swap_kv else v
        elif name == "transformer.h.%s.attn.q.weight" % bid:
            yield "blk.%s.attn_q.weight" % bid, data
        elif name == "transformer.h.%s.mlp.gate_up_proj.weight" % bid:
            yield "blk.%s.ffn_gate.weight" % bid, data[:ff_dim]
            yield "blk.%s.ffn_up.weight" % bid, data[ff_dim:]
        else:
            yield names.get_name(name, try_suffixes=(".weight", ".bias")), data


def bert_vocab(gguf, model_dir, writer, n_vocab):
    """bert.py's BertModel.set_vocab: tokens by id (get_vocab_base: added special tokens CONTROL),
    in phantom-space form, and gguf-py's SpecialVocab on the directory's tokenizer files."""
    with open(os.path.join(model_dir, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    by_id = {i: (t, gguf.TokenType.NORMAL) for t, i in tok["model"]["vocab"].items()}
    for added in tok["added_tokens"]:
        by_id[added["id"]] = (added["content"], gguf.TokenType.CONTROL if added["special"]
                              else gguf.TokenType.USER_DEFINED)
    entries = [by_id.get(i, ("[PAD%d]" % i, gguf.TokenType.UNUSED)) for i in range(n_vocab)]

    def phantom(token, kind):
        if kind == gguf.TokenType.CONTROL:
            return token
        return token[2:] if token.startswith("##") else "\u2581" + token
    writer.add_token_type_count(2)
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("jina-v2-en")
    writer.add_token_list([phantom(t, k) for t, k in entries])
    writer.add_token_types([int(k) for _, k in entries])
    gguf.SpecialVocab(model_dir, n_vocab=n_vocab).add_to_gguf(writer)


def jina_bert(gguf, np, hp, tensors, writer, model_dir):
    """bert.py's JinaBertV2Model on BertModel and base.py's TextModel.set_gguf_parameters."""
    writer.add_block_count(hp["num_hidden_layers"])
    writer.add_context_length(hp["max_position_embeddings"])
    writer.add_embedding_length(hp["hidden_size"])
    writer.add_feed_forward_length(hp["intermediate_size"])
    writer.add_head_count(hp["num_attention_heads"])
    writer.add_layer_norm_eps(hp["layer_norm_eps"])
    writer.add_causal_attention(False)
    bert_vocab(gguf, model_dir, writer, hp["vocab_size"])
    names = tensor_map(gguf, gguf.MODEL_ARCH.JINA_BERT_V2, hp["num_hidden_layers"])
    for name, data in tensors.items():
        name = name[len("bert."):] if name.startswith("bert.") else name
        if name in ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias") or name.startswith("cls."):
            continue
        yield names.get_name(name, try_suffixes=(".weight", ".bias")), data


CONVERTERS = {"mpt": ("mpt", mpt), "baichuan": ("baichuan", baichuan), "jais": ("jais", jais),
              "gpt_refact": ("refact", refact), "bert": ("jina-bert-v2", jina_bert)}


def convert(gguf, np, model_dir, out, outtype, arch=None, config=None, **options):
    """The checkpoint as convert_hf_to_gguf.py --outtype OUTTYPE writes it: f32 everything F32;
    f16 the matrices F16 and 1-D tensors F32; q8_0 every matrix quantized by gguf-py (llama-quantize
    --pure's layout). `arch` and `config` (config.json keys) override."""
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        hp = json.load(f)
    hp.update(config or {})
    family_arch, body = CONVERTERS[hp["model_type"]]
    writer = gguf.GGUFWriter(out, arch or family_arch)
    tensors = read_safetensors(np, os.path.join(model_dir, "model.safetensors"))
    written = list(body(gguf, np, hp, tensors, writer, model_dir) if family_arch == "jina-bert-v2"
                   else body(gguf, np, hp, tensors, writer, **options))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32 if outtype == "f32" else gguf.LlamaFileType.MOSTLY_F16)
    for name, data in written:
        if name is None:
            raise RuntimeError("gguf-py has no %s name for a tensor of %s" % (family_arch, model_dir))
        if outtype == "q8_0" and data.ndim == 2:
            q = gguf.GGMLQuantizationType.Q8_0
            writer.add_tensor(name, gguf.quants.quantize(data.astype(np.float32), q), raw_dtype=q)
            continue
        data = data.astype(np.float32) if outtype != "f16" or data.ndim == 1 else data.astype(np.float16)
        writer.add_tensor(name, np.ascontiguousarray(data))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def greedy(vkf_run, model, weights, logits):
    return run_json(vkf_run, ["--model", model, "--prompt-ids", PROMPT, "--n-predict", str(N_PREDICT), "--check",
                              "--check-tolerance", str(BOUND), "--kv", "f32", "--weights", weights,
                              "--logits-out", logits])


def compare(np, vkf_run, label, gguf_path, model_dir, weights, tmp, bound=None):
    ours = greedy(vkf_run, gguf_path, weights, os.path.join(tmp, "gguf.npy"))
    theirs = greedy(vkf_run, model_dir, weights, os.path.join(tmp, "dir.npy"))
    if ours is None or theirs is None:
        return
    if ours.get("generated_ids") != theirs.get("generated_ids") or len(ours["generated_ids"]) != N_PREDICT:
        fail("%s: GGUF generated %r, the directory %r" % (label, ours.get("generated_ids"),
                                                          theirs.get("generated_ids")))
    error = ours.get("check", {}).get("max_rel_logit_error")
    if error is None or not error < BOUND:
        fail("%s: GGUF --check error %r, expected < %g" % (label, error, BOUND))
    a, b = np.load(os.path.join(tmp, "gguf.npy")), np.load(os.path.join(tmp, "dir.npy"))
    if bound is None:
        if a.shape != b.shape or not np.array_equal(a, b):
            fail("%s: GGUF logits differ from the directory's (max |diff| %g)"
                 % (label, float(np.max(np.abs(a - b))) if a.shape == b.shape else float("nan")))
        print("%-22s ids %s, reference error %.3g, logits equal to the directory's"
              % (label, ours.get("generated_ids"), error))
        return
    apart = float(np.max(np.abs(a - b)) / np.max(np.abs(b))) if a.shape == b.shape else float("inf")
    if not apart < bound:
        fail("%s: GGUF logits %g apart from the directory's, expected < %g" % (label, apart, bound))
    print("%-22s ids %s, reference error %.3g, logits %.3g apart from the directory's"
          % (label, ours.get("generated_ids"), error, apart))


def embed(np, vkf_embed, model, args, out):
    proc = run(vkf_embed, ["--model", model, "--pooling", "none", "--out", out, "--quiet"] + args)
    if proc.returncode != 0:
        fail("vkf-embed --model %s %s: exit %d: %s" % (model, " ".join(args), proc.returncode, proc.stderr))
        return None
    return proc, np.load(out)


def compare_embeddings(np, vkf_embed, label, gguf_path, model_dir, weights, tmp):
    """Every token's state from the GGUF equal to the directory's: on ids, and on a text, which
    the GGUF's tokenizer (bert WordPiece from tokenizer.ggml.*) must split as tokenizer.json does."""
    for what, args in (("ids", ["--prompt-ids", "2,10,11,12,13,3"]), ("text", ["--prompt", BERT_TEXT])):
        common = args + ["--weights", weights, "--check"]
        ours = embed(np, vkf_embed, gguf_path, common, os.path.join(tmp, "gguf.npy"))
        theirs = embed(np, vkf_embed, model_dir, common, os.path.join(tmp, "dir.npy"))
        if ours is None or theirs is None:
            continue
        if ours[1].shape != theirs[1].shape or not np.array_equal(ours[1], theirs[1]):
            fail("%s %s: GGUF states %s differ from the directory's %s" % (label, what, ours[1].shape,
                                                                           theirs[1].shape))
        else:
            print("%-22s %s: %d token states equal to the directory's; %s" % (label, what, ours[1].shape[0],
                                                                               ours[0].stdout.strip()))


def refused(vkf_run, label, path, expected):
    proc = run(vkf_run, ["--model", path, "--prompt-ids", PROMPT, "--n-predict", "1"])
    if proc.returncode == 0 or expected not in proc.stderr:
        fail("%s: exit %d, expected %r in stderr %r" % (label, proc.returncode, expected, proc.stderr))
    else:
        print("%-22s refused: %s" % (label, expected))


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    vkf_run, make, npm_dir, vkf_embed = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3]), sys.argv[4]
    bert_tokenizer = sys.argv[5]
    gguf, np = gguf_compare.gguf_modules(npm_dir)

    with tempfile.TemporaryDirectory(prefix="vkf_gguf_families_") as tmp:
        for case, (family, options) in CASES.items():
            for dtype in ("f32", "f16"):
                model = os.path.join(tmp, "%s-%s" % (case, dtype))
                proc = run(make, ["--out", model, "--family", family, "--preset", "tiny", "--dtype", dtype] + options)
                if proc.returncode != 0:
                    fail("vkf-make-checkpoint --family %s: exit %d: %s" % (family, proc.returncode, proc.stderr))
                    continue
                path = model + ".gguf"
                convert(gguf, np, model, path, dtype)
                compare(np, vkf_run, "%s %s" % (case, dtype), path, model, dtype, tmp, SCALED.get(case, {}).get(dtype))
            # Q8_0 matrices read as vkformer's q8_0 (Baichuan's parts regrouped, Jais' planes in the
            # model's orientation): the model runs, within its bound of the double-precision
            # reference on the same weights, and near the f32 directory.
            q8 = os.path.join(tmp, "%s-q8_0.gguf" % case)
            f32_dir = os.path.join(tmp, "%s-f32" % case)
            if not os.path.isdir(f32_dir):
                fail("%s: no f32 checkpoint to quantize" % case)
            else:
                convert(gguf, np, f32_dir, q8, "q8_0")
                ours = greedy(vkf_run, q8, "q8_0", os.path.join(tmp, "q8.npy"))
                theirs = greedy(vkf_run, f32_dir, "f32", os.path.join(tmp, "f32.npy"))
                if ours is not None and theirs is not None:
                    a, b = np.load(os.path.join(tmp, "q8.npy")), np.load(os.path.join(tmp, "f32.npy"))
                    apart = float(np.max(np.abs(a - b)) / np.max(np.abs(b))) if a.shape == b.shape else float("inf")
                    error = ours.get("check", {}).get("max_rel_logit_error")
                    if error is None or not error < BOUND or not apart < Q8_APART:
                        fail("%s q8_0: reference error %r, %g apart from f32, expected < %g and < %g"
                             % (case, error, apart, BOUND, Q8_APART))
                    print("%-22s reference error %.3g, logits %.3g apart from the f32 directory's"
                          % (case + " q8_0", error, apart))
        for dtype in ("f32", "f16"):
            model = os.path.join(tmp, "jina-bert-%s" % dtype)
            proc = run(make, ["--out", model, "--family", "jina-bert", "--preset", "tiny", "--dtype", dtype,
                              "--vocab", "59"])
            if proc.returncode != 0:
                fail("vkf-make-checkpoint --family jina-bert: exit %d: %s" % (proc.returncode, proc.stderr))
                continue
            shutil.copy(bert_tokenizer, os.path.join(model, "tokenizer.json"))
            with open(os.path.join(model, "tokenizer_config.json"), "w", encoding="utf-8") as f:
                json.dump({"tokenizer_class": "BertTokenizer", "cls_token": "[CLS]", "sep_token": "[SEP]",
                           "unk_token": "[UNK]", "pad_token": "[PAD]", "mask_token": "[MASK]",
                           "do_lower_case": True}, f)
            path = model + ".gguf"
            convert(gguf, np, model, path, dtype)
            compare_embeddings(np, vkf_embed, "jina-bert-v2 %s" % dtype, path, model, dtype, tmp)
        llama_check.refact_against_llama(np, gguf, gguf_compare.gguf_py_dir(npm_dir), npm_dir, vkf_run, tmp,
                                         convert, greedy, PROMPT)
        rope = os.path.join(tmp, "baichuan-7b.gguf")
        convert(gguf, np, os.path.join(tmp, "baichuan-f32"), rope, "f32", config={"num_hidden_layers": 32})
        refused(vkf_run, "baichuan of 32 blocks", rope, "baichuan.block_count 32 is Baichuan-7B's")
        other = os.path.join(tmp, "refact.gguf")
        convert(gguf, np, os.path.join(tmp, "mpt-f32"), other, "f32", arch="starcoder")
        refused(vkf_run, "starcoder", other, "GGUF architecture 'starcoder' is not an ALiBi family vkformer runs")

    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
