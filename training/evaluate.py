"""Held-out perplexity as llama.cpp's perplexity tool measures it, the definition vkformer's
vkf-perplexity is compared with:

  the token stream (no BOS) is cut into non-overlapping windows of C tokens from the
  start, the remainder dropped; each window runs through the model on its own; only the
  second half of each window is scored: with first = C // 2, the sum of
  -log softmax(logits[j])[tokens[j + 1]] for j in first .. C - 2; perplexity =
  exp(total NLL / total scored tokens).
"""

import math

import torch


@torch.no_grad()
def perplexity(model, ids, ctx):
    """{"ctx", "perplexity", "nll", "scored_tokens", "windows"} for one context length."""
    windows = len(ids) // ctx
    first = ctx // 2
    total, scored = 0.0, 0
    for w in range(windows):
        window = torch.tensor(ids[w * ctx:(w + 1) * ctx]).unsqueeze(0)
        logp = torch.log_softmax(model(window)[0].float(), dim=-1)
        targets = window[0, first + 1:]
        nll = -logp[first:ctx - 1].gather(1, targets.unsqueeze(1))
        total += nll.double().sum().item()
        scored += targets.numel()
    return {"ctx": ctx, "perplexity": math.exp(total / scored), "nll": total, "scored_tokens": scored,
            "windows": windows}
