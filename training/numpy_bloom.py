"""A second, independent BLOOM forward pass in NumPy float64, straight from the shipped
safetensors tensors, to check training/bloom.py (and so what the checkpoint means): it
shares no code with the PyTorch model and computes ALiBi as slope * (j - i), vkformer's
form, instead of BLOOM's slope * j.
"""

import math

import numpy as np


def slopes(n_head):
    # Press et al.: 2^(-8k/n) for n a power of two; otherwise the first 2^floor(log2 n)
    # of those, then the odd-numbered slopes of the series for twice that many heads.
    p = 2 ** int(math.floor(math.log2(n_head)))
    out = [2.0 ** (-8.0 * k / p) for k in range(1, p + 1)]
    out += [2.0 ** (-8.0 * k / (2 * p)) for k in range(1, 2 * p, 2)][: n_head - p]
    return np.array(out)


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def logits(tensors, config, ids):
    """[len(ids), vocab] float64 logits; tensors as saved (names with "transformer.")."""
    t = {k.removeprefix("transformer."): v.astype(np.float64) for k, v in tensors.items()}
    eps, n_head = config["layer_norm_epsilon"], config["n_head"]
    n = len(ids)
    x = layer_norm(t["word_embeddings.weight"][ids], t["word_embeddings_layernorm.weight"],
                   t["word_embeddings_layernorm.bias"], eps)
    hidden = x.shape[1]
    d = hidden // n_head
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    bias = slopes(n_head)[:, None, None] * (j - i)[None]
    bias = np.where(j > i, -np.inf, bias)
    for layer in range(config["n_layer"]):
        p = f"h.{layer}."
        y = layer_norm(x, t[p + "input_layernorm.weight"], t[p + "input_layernorm.bias"], eps)
        qkv = (y @ t[p + "self_attention.query_key_value.weight"].T + t[p + "self_attention.query_key_value.bias"])
        qkv = qkv.reshape(n, n_head, 3, d)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]  # [n, head, d]
        s = np.einsum("ihd,jhd->hij", q, k) / math.sqrt(d) + bias
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = np.einsum("hij,jhd->ihd", s, v).reshape(n, hidden)
        x = x + ctx @ t[p + "self_attention.dense.weight"].T + t[p + "self_attention.dense.bias"]
        y = layer_norm(x, t[p + "post_attention_layernorm.weight"], t[p + "post_attention_layernorm.bias"], eps)
        y = gelu_tanh(y @ t[p + "mlp.dense_h_to_4h.weight"].T + t[p + "mlp.dense_h_to_4h.bias"])
        x = x + y @ t[p + "mlp.dense_4h_to_h.weight"].T + t[p + "mlp.dense_4h_to_h.bias"]
    x = layer_norm(x, t["ln_f.weight"], t["ln_f.bias"], eps)
    return x @ t["word_embeddings.weight"].T
