#!/usr/bin/python3
"""Compares vkformer's logits with this PyTorch model's on the shipped weights.

  XDG_RUNTIME_DIR=/tmp vkf-run --model models/kjv-bloom --prompt-ids 77,114,262,2086,394 \
      --n-predict 16 --check --json --quiet --logits-out /tmp/logits.npy > /tmp/run.json
  python3 training/compare_vkf_logits.py --model models/kjv-bloom --run-json /tmp/run.json \
      --logits /tmp/logits.npy

Step s of vkf-run was sampled from the logits after prompt + generated[:s]; PyTorch runs
once over prompt + generated[:-1] and its row len(prompt) - 1 + s is compared with step s,
as max |vkf - torch| / max |torch| (vkf-run --check's measure). Prints one JSON object:
the worst and per-step errors and the generated text decoded by the Python tokenizer.
"""

import argparse
import json
import os
import sys

import numpy as np
import torch

import bpe
import checkpoint


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="the model directory")
    p.add_argument("--run-json", required=True, help="vkf-run --json output")
    p.add_argument("--logits", required=True, help="vkf-run --logits-out file [n_predict, vocab]")
    p.add_argument("--tolerance", type=float, default=1e-3)
    args = p.parse_args()

    with open(args.run_json) as f:
        run = json.load(f)
    prompt, generated = run["prompt_ids"], run["generated_ids"]
    vkf = np.load(args.logits).astype(np.float64)
    assert vkf.shape[0] == len(generated), "one logits row per generated token expected"

    model, _, _ = checkpoint.load(args.model)
    with torch.no_grad():
        ours = model(torch.tensor([prompt + generated[:-1]]))[0].double().numpy()
    rows = ours[len(prompt) - 1:]
    errors = [float(np.abs(vkf[s] - rows[s]).max() / np.abs(rows[s]).max()) for s in range(len(generated))]
    greedy_agrees = all(int(rows[s].argmax()) == generated[s] for s in range(len(generated)))

    tokenizer = bpe.Tokenizer.load(os.path.join(args.model, "tokenizer.json"))
    result = {
        "prompt_ids": prompt,
        "generated_ids": generated,
        "text": tokenizer.decode(prompt + generated),
        "max_rel_vs_pytorch": max(errors),
        "per_step_max_rel": [float(f"{e:.3g}") for e in errors],
        "pytorch_greedy_agrees": greedy_agrees,
        "vkf_check_max_rel": run.get("check", {}).get("max_rel_logit_error"),
    }
    # One key per line, lists on their line.
    print("{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in result.items())
          + "\n}")
    return 0 if max(errors) <= args.tolerance else 3


if __name__ == "__main__":
    sys.exit(main())
