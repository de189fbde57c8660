#!/usr/bin/env python3
"""vkf-run on each random checkpoint (f16, q8_0, q4_0 of BLOOM and MPT) with --check (our
float64 reference on the same tokens), and, where `transformers` imports, Hugging Face's own
BloomForCausalLM and MptForCausalLM on the f16 checkpoints in fp32: an independent reference.
As in training/compare_vkf_logits.py, vkf-run's step s is compared with row
len(prompt) - 1 + s of one Hugging Face pass over prompt + generated[:-1], as
max |vkf - hf| / max |hf| (vkf-run --check's measure), and greedy agreement is recorded.

usage: hf_logits.py --bin DIR --models DIR --out logits.json [--dry-run]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

PROMPT = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7]
HF_CLASSES = {"bloom": "BloomForCausalLM", "mpt": "MptForCausalLM"}
TOLERANCE = 2e-3  # vkf-run --check's in tests/apps/families_cli_test.py; f16 weights, fp32 KV


def run_vkf(bin_dir, model, n_predict, logits):
    cmd = [os.path.join(bin_dir, "vkf-run"), "--model", model, "--prompt-ids", ",".join(map(str, PROMPT)),
           "--n-predict", str(n_predict), "--kv", "f32", "--check", "--json", "--quiet", "--logits-out", logits]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError("vkf-run exited %d: %s" % (proc.returncode, proc.stderr.strip()[-300:]))
    return json.loads(proc.stdout)


def hf_compare(model_dir, family, run, logits_path):
    import numpy as np
    import torch
    import transformers

    cls = getattr(transformers, HF_CLASSES[family])
    model = cls.from_pretrained(model_dir).float().eval()
    prompt, generated = run["prompt_ids"], run["generated_ids"]
    with torch.no_grad():
        hf = model(torch.tensor([prompt + generated[:-1]])).logits[0].double().numpy()
    rows = hf[len(prompt) - 1:]
    vkf = np.load(logits_path).astype(np.float64)
    errors = [float(np.abs(vkf[s] - rows[s]).max() / np.abs(rows[s]).max()) for s in range(len(generated))]
    return {"hf": "%s (transformers %s)" % (HF_CLASSES[family], transformers.__version__),
            "max_rel_vs_hf": max(errors), "per_step_max_rel_vs_hf": [float("%.3g" % e) for e in errors],
            "hf_greedy_agrees": all(int(rows[s].argmax()) == generated[s] for s in range(len(generated)))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--extra", action="append", default=[],
                    help="another BLOOM or MPT checkpoint folder (the trained models/kjv-bloom)")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    n_predict = 4 if args.dry_run else 16
    reasons = []
    try:
        import importlib
        for module in ("numpy", "torch", "transformers"):
            importlib.import_module(module)
        hf_ok = True
    except Exception as e:  # missing, or broken on import: the comparison is skipped, the rest runs
        hf_ok = False
        reasons.append("Hugging Face comparison skipped: %s" % e)
    doc = {"tolerance": TOLERANCE, "prompt_ids": PROMPT, "models": [], "note": "; ".join(reasons)}
    failed = False
    scratch = tempfile.mkdtemp(prefix="vkf-logits-")
    names = sorted(n for n in os.listdir(args.models) if os.path.isdir(os.path.join(args.models, n)))
    if args.dry_run:  # each family's f16 and one quantized format each: 4 runs of ~2 s on lavapipe
        names = [n for n in names if n in ("bloom-f16", "bloom-q8_0", "mpt-f16", "mpt-q4_0")]
    folders = [(n, os.path.join(args.models, n)) for n in names]
    for extra in args.extra:  # named by its folder; its config.json says the family
        with open(os.path.join(extra, "config.json")) as f:
            model_type = json.load(f).get("model_type", "?")
        folders.append(("%s-%s" % (model_type, os.path.basename(os.path.normpath(extra))), extra))
    for name, model in folders:
        family = name.split("-")[0]
        entry = {"name": name}
        logits = os.path.join(scratch, name + ".npy")
        try:
            run = run_vkf(args.bin, model, n_predict, logits)
            entry["generated_ids"] = run["generated_ids"]
            entry["vkf_check_max_rel"] = run.get("check", {}).get("max_rel_logit_error")
            if hf_ok and (name.endswith("-f16") or model in args.extra) and family in HF_CLASSES:
                entry.update(hf_compare(model, family, run, logits))
                failed |= not entry["max_rel_vs_hf"] <= TOLERANCE
        except Exception as e:  # one checkpoint's failure is recorded, the rest still run
            entry["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
            failed = True
        doc["models"].append(entry)
        print(json.dumps(entry), flush=True)
        with open(args.out, "w") as f:  # after each checkpoint, so that a timeout keeps what ran
            json.dump(doc, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
