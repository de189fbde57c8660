#!/usr/bin/env python3
"""An independent NumPy (float64) forward pass of BLOOM and MPT checkpoints, written from
the Hugging Face / llm-foundry model code, to cross-check vkformer's C++ reference model.

As a module:
    import model_numpy
    logits = model_numpy.logits("path/to/model_dir", [1, 2, 3])   # [T, vocab] float64

As a test (the reference_model_numpy CTest):
    model_numpy.py --test PATH/TO/vkf-make-checkpoint PATH/TO/reference_logits
writes tiny random checkpoints in several layouts, runs both implementations and checks
that the logits agree to double precision. Exits 77 (CTest skip) when numpy is missing.

Nothing here is shared with the C++ code: the safetensors reader, config parsing, ALiBi
slopes (BLOOM's build_alibi_tensor, MPT's gen_slopes / build_alibi_bias), the QKV layouts
and the blocks are all written out again from the model definitions.
"""

import json
import math
import os
import shlex
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:  # pragma: no cover - only reached on machines without numpy
    np = None

# A cross-build's programs run under its emulator (tests/CMakeLists.txt's VKF_TEST_EMULATOR,
# as tests/apps/cli_checks.py's command() does).
EMULATOR = shlex.split(os.environ.get("VKF_TEST_EMULATOR", ""))


# ---------------------------------------------------------------------------------------
# safetensors


def _read_safetensors(path):
    """{name: array} for the F32/F16/BF16 tensors of one .safetensors file, kept in float32
    or float16 (exact) so that a BLOOM-560m fits; _Weights converts to float64 on use."""
    with open(path, "rb") as f:
        blob = f.read()
    (header_len,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + header_len].decode("utf-8"))
    data = memoryview(blob)[8 + header_len :]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = data[begin:end]
        dtype = entry["dtype"]
        if dtype == "F32":
            values = np.frombuffer(raw, dtype="<f4")
        elif dtype == "F16":
            values = np.frombuffer(raw, dtype="<f2")
        elif dtype == "BF16":
            values = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            continue  # not a weight this script reads
        tensors[name] = values.reshape(entry["shape"])
    return tensors


def load_weights(model_dir):
    """Every float tensor of model.safetensors or of the shards an index lists."""
    single = os.path.join(model_dir, "model.safetensors")
    if os.path.exists(single):
        return _read_safetensors(single)
    with open(os.path.join(model_dir, "model.safetensors.index.json")) as f:
        index = json.load(f)
    tensors = {}
    for shard in sorted(set(index["weight_map"].values())):
        tensors.update(_read_safetensors(os.path.join(model_dir, shard)))
    return tensors


class _Weights:
    """Lookup with or without the "transformer." prefix."""

    def __init__(self, tensors, round_to_f16=False):
        self.tensors = tensors
        self.round_to_f16 = round_to_f16

    def has(self, name):
        return name in self.tensors or ("transformer." + name) in self.tensors

    def __call__(self, name):
        w = self.tensors.get(name)
        if w is None:
            w = self.tensors["transformer." + name]
        if self.round_to_f16:
            w = w.astype(np.float16)
        return w.astype(np.float64)

    def rows(self, name, ids):
        """Rows `ids` of a matrix (an embedding lookup) without converting the whole table."""
        w = self.tensors.get(name)
        if w is None:
            w = self.tensors["transformer." + name]
        w = w[ids]
        if self.round_to_f16:
            w = w.astype(np.float16)
        return w.astype(np.float64)


# ---------------------------------------------------------------------------------------
# shared pieces


def _layer_norm(x, weight, bias, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps) * weight
    return y if bias is None else y + bias


def _linear(x, weight, bias):
    y = x @ weight.T
    return y if bias is None else y + bias


def _softmax(scores):
    scores = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(scores)
    return e / e.sum(axis=-1, keepdims=True)


# ---------------------------------------------------------------------------------------
# BLOOM (transformers/models/bloom/modeling_bloom.py)


def bloom_slopes(n_head):
    """build_alibi_tensor's slopes: powers of 2^(-8/c) for the closest power of two c <= n,
    then odd powers of 2^(-8/(2c)) for the remaining heads."""
    closest = 2 ** math.floor(math.log2(n_head))
    base = 2.0 ** (-(2.0 ** -(math.log2(closest) - 3)))
    slopes = [base**p for p in range(1, closest + 1)]
    if closest != n_head:
        extra_base = 2.0 ** (-(2.0 ** -(math.log2(2 * closest) - 3)))
        remaining = min(closest, n_head - closest)
        slopes += [extra_base**p for p in range(1, 1 + 2 * remaining, 2)]
    return np.array(slopes, dtype=np.float64)


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def bloom_forward(cfg, W, ids):
    n_head = cfg["n_head"]
    hidden = cfg.get("n_embed", cfg.get("hidden_size"))
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    head_dim = hidden // n_head
    T = len(ids)

    x = W.rows("word_embeddings.weight", ids)
    x = _layer_norm(x, W("word_embeddings_layernorm.weight"), W("word_embeddings_layernorm.bias"), eps)

    # alibi[h, j] = slope_h * j (key position); with the causal mask this equals slope*(j-i) per row.
    alibi = bloom_slopes(n_head)[:, None] * np.arange(T)[None, :]
    causal = np.tril(np.ones((T, T), dtype=bool))
    for layer in range(cfg["n_layer"]):
        p = "h.%d." % layer
        residual = x
        h = _layer_norm(x, W(p + "input_layernorm.weight"), W(p + "input_layernorm.bias"), eps)
        fused = _linear(h, W(p + "self_attention.query_key_value.weight"), W(p + "self_attention.query_key_value.bias"))
        fused = fused.reshape(T, n_head, 3, head_dim)  # _split_heads
        q = fused[:, :, 0, :].transpose(1, 0, 2)  # [n_head, T, head_dim]
        k = fused[:, :, 1, :].transpose(1, 0, 2)
        v = fused[:, :, 2, :].transpose(1, 0, 2)
        scores = alibi[:, None, :] + (q @ k.transpose(0, 2, 1)) / math.sqrt(head_dim)
        scores = np.where(causal[None], scores, -np.inf)
        context = _softmax(scores) @ v  # [n_head, T, head_dim]
        context = context.transpose(1, 0, 2).reshape(T, hidden)  # _merge_heads
        x = _linear(context, W(p + "self_attention.dense.weight"), W(p + "self_attention.dense.bias")) + residual

        residual = x
        h = _layer_norm(x, W(p + "post_attention_layernorm.weight"), W(p + "post_attention_layernorm.bias"), eps)
        h = _gelu_tanh(_linear(h, W(p + "mlp.dense_h_to_4h.weight"), W(p + "mlp.dense_h_to_4h.bias")))
        x = _linear(h, W(p + "mlp.dense_4h_to_h.weight"), W(p + "mlp.dense_4h_to_h.bias")) + residual

    x = _layer_norm(x, W("ln_f.weight"), W("ln_f.bias"), eps)
    head = W("word_embeddings.weight") if cfg.get("tie_word_embeddings", True) else W("lm_head.weight")
    return x @ head.T


# ---------------------------------------------------------------------------------------
# MPT (llm-foundry llmfoundry/models/mpt/modeling_mpt.py, layers/attention.py)


def mpt_gen_slopes(n_heads, alibi_bias_max):
    """gen_slopes: pad the head count to a power of two, 1 / 2^(m * b / N) for m = 1..N,
    then for a padded count the odd positions followed by the even ones, cut to n_heads."""
    padded = 2 ** math.ceil(math.log2(n_heads))
    m = np.arange(1, padded + 1, dtype=np.float64) * (alibi_bias_max / padded)
    slopes = 1.0 / np.power(2.0, m)
    if padded != n_heads:
        slopes = np.concatenate([slopes[1::2], slopes[::2]])[:n_heads]
    return slopes


def mpt_alibi_bias(n_heads, seq_len, alibi_bias_max):
    """build_alibi_bias (causal, full=False): [n_heads, 1, seq_len], slope * (j - (seq_len-1))."""
    bias = np.arange(1 - seq_len, 1, dtype=np.float64)[None, None, :]
    return bias * mpt_gen_slopes(n_heads, alibi_bias_max)[:, None, None]


def _gelu_erf(x):
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def mpt_forward(cfg, W, ids):
    d_model = cfg["d_model"]
    n_heads = cfg["n_heads"]
    attn = cfg.get("attn_config", {})
    alibi_bias_max = attn.get("alibi_bias_max", 8)
    clip_qkv = attn.get("clip_qkv")
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    no_bias = cfg.get("no_bias", False)
    head_dim = d_model // n_heads
    T = len(ids)

    def b(name):
        return None if no_bias else W(name)

    x = W.rows("wte.weight", ids)
    attn_bias = mpt_alibi_bias(n_heads, T, alibi_bias_max)
    causal = np.tril(np.ones((T, T), dtype=bool))
    softmax_scale = 1.0 / math.sqrt(d_model / n_heads)
    for block in range(cfg["n_layers"]):
        p = "blocks.%d." % block
        a = _layer_norm(x, W(p + "norm_1.weight"), b(p + "norm_1.bias"), eps)
        qkv = _linear(a, W(p + "attn.Wqkv.weight"), b(p + "attn.Wqkv.bias"))
        if clip_qkv:
            qkv = np.clip(qkv, -clip_qkv, clip_qkv)
        query, key, value = np.split(qkv, 3, axis=-1)  # qkv.chunk(3, dim=2)
        q = query.reshape(T, n_heads, head_dim).transpose(1, 0, 2)  # 'b s (h d) -> b h s d'
        k = key.reshape(T, n_heads, head_dim).transpose(1, 2, 0)  # 'b s (h d) -> b h d s'
        v = value.reshape(T, n_heads, head_dim).transpose(1, 0, 2)
        attn_weight = (q @ k) * softmax_scale + attn_bias
        attn_weight = np.where(causal[None], attn_weight, -np.inf)
        out = (_softmax(attn_weight) @ v).transpose(1, 0, 2).reshape(T, d_model)
        x = x + _linear(out, W(p + "attn.out_proj.weight"), b(p + "attn.out_proj.bias"))

        m = _layer_norm(x, W(p + "norm_2.weight"), b(p + "norm_2.bias"), eps)
        m = _gelu_erf(_linear(m, W(p + "ffn.up_proj.weight"), b(p + "ffn.up_proj.bias")))
        x = x + _linear(m, W(p + "ffn.down_proj.weight"), b(p + "ffn.down_proj.bias"))

    x = _layer_norm(x, W("norm_f.weight"), b("norm_f.bias"), eps)
    head = W("wte.weight") if cfg.get("tie_word_embeddings", True) else W("lm_head.weight")
    return x @ head.T


# ---------------------------------------------------------------------------------------


def logits(model_dir, ids, round_weights_to_f16=False, config=None):
    """Logits [len(ids), vocab] (float64) of the BLOOM or MPT checkpoint in model_dir.
    config: a parsed config.json to use instead of model_dir's (to alter settings)."""
    if config is None:
        with open(os.path.join(model_dir, "config.json")) as f:
            config = json.load(f)
    cfg = config
    W = _Weights(load_weights(model_dir), round_weights_to_f16)
    ids = np.asarray(ids, dtype=np.int64)
    if cfg["model_type"] == "bloom":
        return bloom_forward(cfg, W, ids)
    if cfg["model_type"] == "mpt":
        return mpt_forward(cfg, W, ids)
    raise ValueError("unknown model_type %r" % cfg["model_type"])


# ---------------------------------------------------------------------------------------
# the CTest


def _run_test(make_checkpoint, reference_logits):
    # (name, vkf-make-checkpoint arguments, token count, reference_logits extra arguments)
    cases = [
        ("bloom-f32", "--family bloom --layers 2 --hidden 256 --heads 8 --vocab 1000 --dtype f32", 13, []),
        ("bloom-f16-3shards", "--family bloom --layers 2 --hidden 256 --heads 8 --vocab 777 --dtype f16 --shards 3",
         9, []),
        ("bloom-6heads-bf16", "--family bloom --layers 2 --hidden 192 --heads 6 --vocab 500 --dtype bf16", 11, []),
        ("bloom-f32-as-f16", "--family bloom --layers 1 --hidden 128 --heads 4 --vocab 300 --dtype f32 --seed 5", 7,
         ["--f16-weights"]),
        ("mpt-nobias-f16", "--family mpt --layers 2 --hidden 192 --heads 12 --vocab 1000 --dtype f16", 13, []),
        ("mpt-bias-clip-f32-2shards",
         "--family mpt --layers 2 --hidden 192 --heads 12 --vocab 640 --dtype f32 --bias --clip-qkv 0.25 --shards 2",
         10, []),
        ("mpt-nobias-clip-bmax4-ffn",
         "--family mpt --layers 2 --hidden 96 --heads 6 --vocab 400 --dtype f16 --clip-qkv 0.3 --alibi-bias-max 4 "
         "--ffn 200", 8, []),
    ]
    failures = []
    rng = np.random.default_rng(2024)
    with tempfile.TemporaryDirectory(prefix="vkf_model_numpy_") as tmp:
        for name, make_args, tokens, ref_args in cases:
            model_dir = os.path.join(tmp, name)
            subprocess.run(EMULATOR + [make_checkpoint, "--out", model_dir] + make_args.split(), check=True,
                           capture_output=True, text=True, timeout=300)
            with open(os.path.join(model_dir, "config.json")) as f:
                vocab = json.load(f)["vocab_size"]
            ids = [int(i) for i in rng.integers(0, vocab, size=tokens)]
            ids[1] = vocab - 1  # the last row of the embedding
            out = os.path.join(tmp, name + ".npy")
            proc = subprocess.run(EMULATOR + [reference_logits, model_dir, out] + ref_args + [str(i) for i in ids],
                                  capture_output=True, text=True, timeout=300)
            if proc.returncode != 0:
                failures.append("%s: reference_logits failed (%d): %s" % (name, proc.returncode, proc.stderr))
                continue
            got = np.load(out)
            want = logits(model_dir, ids, round_weights_to_f16="--f16-weights" in ref_args)
            if got.shape != want.shape or got.dtype != np.float64:
                failures.append("%s: C++ logits %s %s, numpy %s" % (name, got.shape, got.dtype, want.shape))
                continue
            max_rel = np.abs(got - want).max() / np.abs(want).max()
            spread = want.std()
            print("%-28s tokens %2d  max|ref| %.3e  std %.3e  max_rel %.3e" % (name, tokens, np.abs(want).max(),
                                                                               spread, max_rel))
            if not (max_rel < 1e-9):
                failures.append("%s: max relative error %.3e >= 1e-9" % (name, max_rel))
            if not (spread > 1e-3):
                failures.append("%s: logits are degenerate (std %.3e)" % (name, spread))

        # Sanity of the checker itself: clip_qkv must bite in the clipped cases, and a model
        # read as fp16 must differ from the fp32 one.
        for name in ("mpt-bias-clip-f32-2shards", "mpt-nobias-clip-bmax4-ffn"):
            model_dir = os.path.join(tmp, name)
            with open(os.path.join(model_dir, "config.json")) as f:
                cfg = json.load(f)
            clipped = logits(model_dir, [1, 2, 3, 4], config=cfg)
            cfg["attn_config"]["clip_qkv"] = None
            unclipped = logits(model_dir, [1, 2, 3, 4], config=cfg)
            if not (np.abs(clipped - unclipped).max() > 1e-6 * np.abs(clipped).max()):
                failures.append("%s: clip_qkv changes nothing; the case does not test it" % name)
        f32 = logits(os.path.join(tmp, "bloom-f32-as-f16"), [1, 2, 3])
        f16 = logits(os.path.join(tmp, "bloom-f32-as-f16"), [1, 2, 3], round_weights_to_f16=True)
        if not (np.abs(f32 - f16).max() > 1e-7):
            failures.append("rounding weights to fp16 changed nothing; the checker is not sensitive")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


def main(argv):
    if np is None:
        print("skipped: this python3 has no numpy (Debian: apt-get install python3-numpy)")
        return 77
    if len(argv) == 4 and argv[1] == "--test":
        return _run_test(argv[2], argv[3])
    if len(argv) >= 3:  # model_numpy.py MODEL_DIR ID... : prints the logits' argmax per position
        out = logits(argv[1], [int(a) for a in argv[2:]])
        print(out.argmax(axis=-1))
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
