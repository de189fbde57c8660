#!/usr/bin/python3
"""How much does ALiBi lose when it forgets? Held-out perplexity of a model at growing context
lengths, full attention against key windows (issue 30), from vkf-perplexity's --json output.

usage: training/window_perplexity.py OUT_DIR [--vkf-perplexity PATH] [--model DIR] [--text FILE]
           [--ctx LIST] [--windows LIST] [--max-tokens N]
Runs `vkf-perplexity --window W --json` once per window unless OUT_DIR/window-W.json exists,
then writes OUT_DIR/window-perplexity.md (a table) and OUT_DIR/window-perplexity.svg (the
plot; Debian's python3-matplotlib).
"""
import argparse
import json
import pathlib
import subprocess

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend is chosen first)


def run_or_load(args, out: pathlib.Path, window: int) -> dict:
    path = out / f"window-{window}.json"
    if not path.exists():
        cmd = [args.vkf_perplexity, "--model", args.model, "--file", args.text, "--ctx", args.ctx,
               "--window", str(window), "--json", "--quiet"]
        if args.max_tokens:
            cmd += ["--max-tokens", str(args.max_tokens)]
        print("+", " ".join(cmd), flush=True)
        text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        path.write_text(text)
    return json.loads(path.read_text())


def label(window: int) -> str:
    return "full attention" if window == 0 else f"window {window}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--vkf-perplexity", default="build/apps/vkf-perplexity")
    parser.add_argument("--model", default="models/kjv-bloom")
    parser.add_argument("--text", default="models/kjv-bloom/heldout.txt")
    parser.add_argument("--ctx", default="128,256,512,1024,2048,4096,8192")
    parser.add_argument("--windows", default="0,128,256,512")
    parser.add_argument("--max-tokens", type=int, default=0, help="score only the text's first N tokens")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    windows = [int(w) for w in args.windows.split(",")]
    runs = {w: run_or_load(args, args.out, w) for w in windows}
    first = runs[windows[0]]
    train = first["model"]["training_length"]
    ctxs = [r["ctx"] for r in first["results"]]

    lines = [f"| context (x {train}) | " + " | ".join(label(w) for w in windows) + " |",
             "| --- |" + " --- |" * len(windows)]
    for i, ctx in enumerate(ctxs):
        cells = [f"{runs[w]['results'][i]['perplexity']:.3f}" for w in windows]
        lines.append(f"| {ctx} ({ctx // train}x) | " + " | ".join(cells) + " |")
    (args.out / "window-perplexity.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))

    fig, ax = plt.subplots(figsize=(7, 4))
    for w in windows:
        rows = runs[w]["results"]
        ax.plot([r["ctx"] for r in rows], [r["perplexity"] for r in rows], marker="o", label=label(w))
    ax.set_xscale("log", base=2)
    ax.set_xticks(ctxs, [str(c) for c in ctxs])
    ax.set_xlabel(f"context length (tokens; trained at {train})")
    ax.set_ylabel("held-out perplexity")
    ax.set_title(f"{first['model']['path']}: full attention and key windows")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out / "window-perplexity.svg", metadata={"Date": None})


if __name__ == "__main__":
    main()
