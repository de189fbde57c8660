#!/usr/bin/python3
"""PyTorch perplexity of the first held-out tokens of a shipped model, for vkformer's tests:
tests/apps/text_cli_test.py runs vkf-perplexity on the same tokens at the same context
lengths and expects these numbers. Writes them into the model's eval.json as "prefix".
The whole held-out table (eval.json's other keys) takes minutes; these take seconds.

  python3 training/evaluate_prefix.py --model models/kjv-bloom
"""

import argparse
import json
import os

import torch

import bpe
import checkpoint
import evaluate

# (context length, tokens): 1x the training length, and 16x (two whole windows).
CASES = ((128, 4096), (2048, 4096))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="a directory train_kjv_bloom.py wrote")
    args = p.parse_args()
    torch.set_num_threads(2)
    model, _, _ = checkpoint.load(args.model)
    tokenizer = bpe.Tokenizer.load(os.path.join(args.model, "tokenizer.json"))
    with open(os.path.join(args.model, "heldout.txt"), encoding="utf-8") as f:
        ids = tokenizer.encode(f.read())
    rows = []
    for ctx, tokens in CASES:
        r = evaluate.perplexity(model, ids[:tokens], ctx)
        rows.append({"ctx": ctx, "tokens": tokens, "perplexity": r["perplexity"], "scored_tokens": r["scored_tokens"]})
        print(rows[-1])
    path = os.path.join(args.model, "eval.json")
    with open(path) as f:
        table = json.load(f)
    table["prefix"] = rows
    with open(path, "w") as f:
        json.dump(table, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
