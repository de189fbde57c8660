"""A BLOOM causal language model in PyTorch with the semantics of Hugging Face's
modeling_bloom.py (BloomForCausalLM), so a state dict saved from it is a BLOOM checkpoint:
same parameter names and shapes, same fused QKV layout, same ALiBi, same GELU. Dropout is
left out (always 0 here); apply_residual_connection_post_layernorm is false.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class BloomConfig:
    vocab_size: int
    hidden_size: int
    n_layer: int
    n_head: int
    layer_norm_epsilon: float = 1e-5
    initializer_range: float = 0.02


def alibi_slopes(n_head):
    """HF's build_alibi_tensor slopes: a geometric series from 2^(-8/n) for the largest power
    of two n <= n_head; the heads beyond it take every other slope of the series for 2n."""
    closest = 2 ** math.floor(math.log2(n_head))
    base = 2.0 ** (-(2.0 ** -(math.log2(closest) - 3)))
    slopes = [base ** p for p in range(1, closest + 1)]
    if closest != n_head:
        extra_base = 2.0 ** (-(2.0 ** -(math.log2(2 * closest) - 3)))
        remaining = min(closest, n_head - closest)
        slopes += [extra_base ** p for p in range(1, 1 + 2 * remaining, 2)]
    # HF computes them in float32 tensors; round the same way.
    return torch.tensor(slopes, dtype=torch.float32)


def attention_bias(n_head, length):
    """[n_head, length, length]: BLOOM's ALiBi term slope_h * key_position, with the future
    masked to -inf. BLOOM adds slope * j, not slope * (j - i); the softmax is the same."""
    positions = torch.arange(length, dtype=torch.float32)
    bias = alibi_slopes(n_head)[:, None, None] * positions[None, None, :]
    future = torch.ones(length, length, dtype=torch.bool).triu(1)
    return bias.masked_fill(future, float("-inf"))


def bloom_gelu(x):
    # modeling_bloom.py's bloom_gelu_forward: the tanh approximation with its constants.
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


class BloomAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head
        self.head_dim = config.hidden_size // config.n_head
        self.query_key_value = nn.Linear(config.hidden_size, 3 * config.hidden_size)
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, x, bias):
        batch, length, hidden = x.shape
        # HF's layout: the fused output is [n_head, 3, head_dim], i.e. q, k, v per head.
        qkv = self.query_key_value(x).view(batch, length, self.n_head, 3, self.head_dim)
        q, k, v = (qkv[..., i, :].transpose(1, 2) for i in range(3))  # [batch, head, len, dim]
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim) + bias
        probs = torch.softmax(scores.float(), dim=-1).to(v.dtype)
        context = torch.matmul(probs, v).transpose(1, 2).reshape(batch, length, hidden)
        return self.dense(context)


class BloomMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense_h_to_4h = nn.Linear(config.hidden_size, 4 * config.hidden_size)
        self.dense_4h_to_h = nn.Linear(4 * config.hidden_size, config.hidden_size)

    def forward(self, x):
        return self.dense_4h_to_h(bloom_gelu(self.dense_h_to_4h(x)))


class BloomBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        eps = config.layer_norm_epsilon
        self.input_layernorm = nn.LayerNorm(config.hidden_size, eps=eps)
        self.self_attention = BloomAttention(config)
        self.post_attention_layernorm = nn.LayerNorm(config.hidden_size, eps=eps)
        self.mlp = BloomMLP(config)

    def forward(self, x, bias):
        x = x + self.self_attention(self.input_layernorm(x), bias)
        return x + self.mlp(self.post_attention_layernorm(x))


class BloomModel(nn.Module):
    """The parameters are named as HF's BloomModel names them."""

    def __init__(self, config):
        super().__init__()
        eps = config.layer_norm_epsilon
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.word_embeddings_layernorm = nn.LayerNorm(config.hidden_size, eps=eps)
        self.h = nn.ModuleList(BloomBlock(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.hidden_size, eps=eps)

    def forward(self, ids, bias):
        x = self.word_embeddings_layernorm(self.word_embeddings(ids))
        for block in self.h:
            x = block(x, bias)
        return self.ln_f(x)


class BloomForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = BloomModel(config)
        self.apply(self._init_weights)
        self._bias = None

    def _init_weights(self, module):
        # HF's BloomPreTrainedModel._init_weights.
        std = self.config.initializer_range
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=std)
            if isinstance(module, nn.Linear):
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    def bias_for(self, length):
        """The ALiBi + causal term for `length` tokens, kept while the length repeats."""
        if self._bias is None or self._bias.shape[-1] != length:
            self._bias = attention_bias(self.config.n_head, length)
        return self._bias

    def forward(self, ids):
        """Logits [batch, length, vocab] for token ids [batch, length]; the LM head is tied
        to the word embeddings, as in BLOOM."""
        x = self.transformer(ids, self.bias_for(ids.shape[1]))
        return F.linear(x, self.transformer.word_embeddings.weight)
