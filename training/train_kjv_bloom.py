#!/usr/bin/python3
"""Trains vkformer's small ALiBi test model from scratch and writes everything it ships:

  python3 training/train_kjv_bloom.py --out models/kjv-bloom

corpus (training/corpus.py) -> byte-level BPE tokenizer (bpe.py) -> tokens -> a BLOOM
causal LM (bloom.py) trained on random 128-token windows -> fp16 checkpoint
(checkpoint.py) -> checks of the shipped weights against a NumPy re-implementation
(numpy_bloom.py) -> held-out perplexity at 1x..16x the training length (evaluate.py).
Every step is logged to OUT/train.log. Seeds are fixed; on the same CPU and library
versions the run repeats (multi-threaded float sums may still differ in the last bits).
"""

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import bloom
import bpe
import checkpoint
import corpus
import evaluate
import numpy_bloom
import tokenizer_check

SAMPLE_PROMPT = "In the beginning God"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="the model directory to write")
    p.add_argument("--vocab", type=int, default=4096, help="vocabulary size, specials included")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--ctx", type=int, default=128, help="training window length")
    p.add_argument("--batch", type=int, default=32, help="windows per step")
    p.add_argument("--steps", type=int, default=850)
    p.add_argument("--warmup", type=int, default=100, help="steps of linear learning-rate warm-up")
    p.add_argument("--lr", type=float, default=2e-3, help="peak learning rate")
    p.add_argument("--min-lr-ratio", type=float, default=0.1, help="the cosine decays to lr * this")
    p.add_argument("--weight-decay", type=float, default=0.1, help="AdamW decay of the matrices")
    p.add_argument("--eval-every", type=int, default=100, help="held-out loss every N steps")
    p.add_argument("--eval-ctx", default="128,256,512,1024,2048", help="perplexity context lengths")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--threads", type=int, default=2)
    return p.parse_args()


class Log:
    """Lines to stdout and OUT/train.log, each stamped with the seconds since the start."""

    def __init__(self, path):
        self.start = time.time()
        self.file = open(path, "w", encoding="utf-8")

    def __call__(self, message=""):
        for line in str(message).split("\n"):
            text = f"[{time.time() - self.start:7.1f}s] {line}"
            print(text, flush=True)
            self.file.write(text + "\n")
        self.file.flush()


def package_versions(names):
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version}\n", *names],
                         capture_output=True, text=True)
    return out.stdout.strip().replace("\n", ", ") or "unknown (no dpkg)"


def lr_at(step, args):
    """Linear warm-up to args.lr, then a cosine down to args.lr * args.min_lr_ratio."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    floor = args.lr * args.min_lr_ratio
    return floor + 0.5 * (args.lr - floor) * (1 + math.cos(math.pi * progress))


@torch.no_grad()
def heldout_loss(model, windows):
    model.eval()
    logits = model(windows[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), windows[:, 1:].reshape(-1)).item()
    model.train()
    return loss


def train(model, train_ids, held_ids, args, log):
    data = torch.tensor(train_ids, dtype=torch.long)
    n = args.ctx + 1
    # A fixed held-out probe for the loss curve (full windows, all positions scored; the
    # real evaluation is evaluate.py's at the end).
    probe = torch.tensor(held_ids[:16 * n], dtype=torch.long).view(16, n)
    matrices = [p for p in model.parameters() if p.dim() == 2]
    vectors = [p for p in model.parameters() if p.dim() < 2]  # biases and LayerNorms: no decay
    optimizer = torch.optim.AdamW([{"params": matrices, "weight_decay": args.weight_decay},
                                   {"params": vectors, "weight_decay": 0.0}],
                                  lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    generator = torch.Generator().manual_seed(args.seed)
    model.train()
    start = time.time()
    recent = []
    log(f"step {0:5d}  held-out loss (16 x {args.ctx} probe) {heldout_loss(model, probe):.4f}")
    for step in range(args.steps):
        lr = lr_at(step, args)
        for group in optimizer.param_groups:
            group["lr"] = lr
        starts = torch.randint(0, len(data) - n + 1, (args.batch,), generator=generator)
        batch = torch.stack([data[s:s + n] for s in starts.tolist()])
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
        optimizer.step()
        recent.append(loss.item())
        done = step + 1
        if done % 25 == 0 or done == args.steps:
            elapsed = time.time() - start
            epochs = done * args.batch * args.ctx / len(train_ids)
            log(f"step {done:5d}  lr {lr:.2e}  train loss {np.mean(recent[-25:]):.4f}  grad norm {grad_norm:.3f}  "
                f"{elapsed / done:.3f} s/step  {elapsed:.0f}s  epochs {epochs:.2f}")
        if done % args.eval_every == 0 or done == args.steps:
            log(f"step {done:5d}  held-out loss (16 x {args.ctx} probe) {heldout_loss(model, probe):.4f}")
    model.eval()
    return {"seconds": time.time() - start, "final_train_loss": float(np.mean(recent[-50:]))}


@torch.no_grad()
def greedy(model, ids, n):
    ids = list(ids)
    for _ in range(n):
        ids.append(int(model(torch.tensor([ids]))[0, -1].argmax()))
    return ids


def check_against_numpy(model, config, tensors, ids, log):
    """The PyTorch model on the shipped weights against numpy_bloom in float64: the largest
    |difference| / max |reference logit| over the positions (vkf-run --check's measure)."""
    with torch.no_grad():
        ours = model(torch.tensor([ids]))[0].double().numpy()
    ref = numpy_bloom.logits(tensors, config, ids)
    rel = max(np.abs(ours[i] - ref[i]).max() / np.abs(ref[i]).max() for i in range(len(ids)))
    log(f"PyTorch float32 vs NumPy float64 logits on {len(ids)} tokens: max rel error {rel:.2e}")
    assert rel < 1e-3, "the PyTorch model and the NumPy re-implementation disagree"
    return rel


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    log = Log(os.path.join(args.out, "train.log"))
    log(f"command: {' '.join(sys.argv)}")
    log(f"settings: {json.dumps(vars(args))}")
    log(f"python {platform.python_version()}, torch {torch.__version__}, numpy {np.__version__}, "
        f"{os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads, {platform.machine()}")
    log(f"packages: {package_versions(['bible-kjv', 'bible-kjv-text', 'python3-torch', 'python3-regex'])}")

    train_text, held_text = corpus.split_corpus(corpus.dump_bible())
    with open(os.path.join(args.out, "heldout.txt"), "w", encoding="utf-8") as f:
        f.write(held_text)
    log(f"corpus: train {len(train_text.encode())} bytes, held-out ({', '.join(corpus.HELDOUT_BOOKS)}) "
        f"{len(held_text.encode())} bytes")

    t = time.time()
    vocab, merges = bpe.train(train_text, args.vocab)
    path = os.path.join(args.out, "tokenizer.json")
    bpe.Tokenizer(vocab, merges).save(path)
    tokenizer = bpe.Tokenizer.load(path)  # encode with exactly what is shipped
    train_ids, held_ids = tokenizer.encode(train_text), tokenizer.encode(held_text)
    assert tokenizer.decode(held_ids) == held_text
    log(f"tokenizer: {len(vocab)} tokens, {len(merges)} merges, trained and applied in {time.time() - t:.1f}s")
    log(f"tokens: train {len(train_ids)} ({len(train_text.encode()) / len(train_ids):.2f} bytes/token), "
        f"held-out {len(held_ids)} ({len(held_text.encode()) / len(held_ids):.2f} bytes/token)")
    n_checks = tokenizer_check.write(tokenizer, held_text, os.path.join(args.out, "tokenizer_check.json"))
    log(f"tokenizer_check.json: {n_checks} texts")

    config = bloom.BloomConfig(vocab_size=len(vocab), hidden_size=args.hidden, n_layer=args.layers,
                               n_head=args.heads)
    model = bloom.BloomForCausalLM(config)
    params = sum(p.numel() for p in model.parameters())
    log(f"model: BLOOM {config}, {params} parameters (LM head tied), ALiBi slopes "
        f"{[round(s, 5) for s in bloom.alibi_slopes(args.heads).tolist()]}")
    tokens = args.steps * args.batch * args.ctx
    log(f"training: {args.steps} steps x {args.batch} windows x {args.ctx} tokens = {tokens} tokens "
        f"({tokens / len(train_ids):.2f} epochs)")
    result = train(model, train_ids, held_ids, args, log)
    log(f"training took {result['seconds']:.0f}s; final train loss (mean of the last 50 steps) "
        f"{result['final_train_loss']:.4f}")

    checkpoint.save(model, args.out, args.ctx)
    shipped, hf_config, tensors = checkpoint.load(args.out)
    size = os.path.getsize(os.path.join(args.out, "model.safetensors"))
    log(f"model.safetensors: {size} bytes, {len(tensors)} F16 tensors")

    prompt = tokenizer.encode(SAMPLE_PROMPT)
    sample = greedy(shipped, prompt, 16)
    log(f"prompt {SAMPLE_PROMPT!r} = ids {','.join(map(str, prompt))}")
    log(f"greedy, 16 tokens: ids {','.join(map(str, sample[len(prompt):]))}")
    log(f"text: {tokenizer.decode(sample)!r}")
    check_against_numpy(shipped, hf_config, tensors, sample, log)

    t = time.time()
    rows = [evaluate.perplexity(shipped, held_ids, int(c)) for c in args.eval_ctx.split(",")]
    log(f"held-out perplexity (float32 on the fp16 weights, second half of each window scored), "
        f"{time.time() - t:.0f}s:")
    log(f"{'ctx':>6} {'x train':>8} {'windows':>8} {'scored':>8} {'perplexity':>11}")
    for r in rows:
        log(f"{r['ctx']:6d} {r['ctx'] / args.ctx:7.0f}x {r['windows']:8d} {r['scored_tokens']:8d} "
            f"{r['perplexity']:11.4f}")
    log(f"perplexity at {rows[-1]['ctx']} / at {rows[0]['ctx']}: {rows[-1]['perplexity'] / rows[0]['perplexity']:.4f}")
    with open(os.path.join(args.out, "eval.json"), "w") as f:
        json.dump({key: [r[key] for r in rows] for key in ("ctx", "perplexity", "scored_tokens", "windows")}
                  | {"heldout_tokens": len(held_ids)}, f, indent=1)
        f.write("\n")
    log(f"done in {time.time() - log.start:.0f}s")


if __name__ == "__main__":
    main()
