#!/usr/bin/env python3
"""vkf-perplexity on K-quant GGUF files made by llama.cpp's own llama-quantize, against
llama.cpp's llama-perplexity on the same files (issue 44: within 1e-3 relative).

models/kjv-bloom is converted to an F16 GGUF with gguf-py (gguf_run_test.py's converter, npm
node-llama-cpp as tests/io/gguf_compare.py installs it); llama-quantize and llama-perplexity
are compiled from the llama.cpp source that package carries against the prebuilt libraries of
npm @node-llama-cpp/linux-x64 (tests/quant/ggml_reference.py installs it), once, into
TOOLS_DIR. Then for the F16 file and llama-quantize's Q8_0, Q6_K and the K-quant mixes Q4_K_M
and Q5_K_M (whose matrices are of several types, each read in its own blocks: the test checks
the files do mix types) both tools score the held-out text on 16 windows of 128 tokens (the
second half of each, llama.cpp's definition), and the perplexities must agree within 1e-3
relative. --pure Q4_K and Q5_K files are not scored apart: the mixes hold those matrices.
--pure Q4_1, Q5_0 and Q5_1 files are scored the same way.

usage: kquant_perplexity_test.py VKF_PERPLEXITY MODEL_DIR NPM_DIR TOOLS_DIR
Exit 77 (skipped) without node, npm, git, numpy or g++, or off Linux x86-64.
"""

import os
import platform
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "io"))
sys.path.insert(0, os.path.join(HERE, "..", "quant"))
import gguf_compare  # noqa: E402  (gguf-py's installation)
import ggml_reference  # noqa: E402  (the prebuilt libraries)
import gguf_run_test  # noqa: E402  (the converter)
from cli_checks import fail, failures, run, run_json  # noqa: E402

BOUND = 1e-3
# 16 windows of 128: llama-perplexity's default batch of 2048 tokens holds them all. Its own
# figures move with the batch's layout (Q6_K: 23.9136 over --chunks 8, 23.9523 for the same 8
# windows within --chunks 16, its CPU kernels taking other paths), so the test keeps its
# documented configuration.
CTX, CHUNKS = 128, 16
TOOLS = {"llama-quantize": ["tools/quantize/main.cpp", "tools/quantize/quantize.cpp"],
         "llama-perplexity": ["tools/perplexity/main.cpp", "tools/perplexity/perplexity.cpp"]}


def lib_flag(libs, stem):
    """-l: for `stem` in `libs`: npm's copy of the package has the versioned files (their
    SONAMEs) without the unversioned links."""
    for name in sorted(os.listdir(libs)):
        if name == stem + ".so" or re.fullmatch(re.escape(stem) + r"\.v[0-9.]+\.so", name):
            return "-l:" + name
    sys.exit("no %s library in %s" % (stem, libs))


def build_tools(source, libs, tools_dir):
    """llama-quantize and llama-perplexity from `source` against the libraries in `libs`."""
    os.makedirs(tools_dir, exist_ok=True)
    # The tools find the libraries by the path they were linked against: another path rebuilds them.
    stamp = os.path.join(tools_dir, "libraries.txt")
    built_for = open(stamp, encoding="utf-8").read() if os.path.exists(stamp) else None
    paths = {}
    for name, files in TOOLS.items():
        out = os.path.join(tools_dir, name)
        if not os.path.exists(out) or built_for != libs:
            includes = ["include", "ggml/include", "common", "vendor", os.path.dirname(files[0])]
            cmd = (["g++", "-O1", "-std=c++17"] + ["-I" + os.path.join(source, i) for i in includes]
                   + [os.path.join(source, f) for f in files]
                   + ["-L" + libs] + [lib_flag(libs, s) for s in ("libllama", "libllama-common", "libggml",
                                                                                  "libggml-base")]
                   + ["-Wl,-rpath," + libs, "-o", out + ".tmp"])
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit("compiling %s failed:\n%s" % (name, proc.stderr[-3000:]))
            os.replace(out + ".tmp", out)
        paths[name] = out
    with open(stamp, "w", encoding="utf-8") as f:
        f.write(libs)
    return paths


def llama_ppl(tool, libs, model, text):
    # Run from the libraries' folder: ggml loads its CPU backend from there. Its log is written
    # by a thread of its own: on a loaded machine the process has been seen to end (exit 0)
    # before the final estimate was written, so such a run is repeated once.
    for attempt in range(2):
        proc = subprocess.run([tool, "-m", model, "-f", text, "-c", str(CTX), "--chunks", str(CHUNKS), "-t", "1",
                               "-fa", "on"], capture_output=True, text=True, cwd=libs, timeout=600)
        found = re.search(r"Final estimate: PPL = ([0-9.]+)", proc.stdout + proc.stderr)
        if found:
            return float(found.group(1))
        if proc.returncode != 0 or attempt == 1:
            fail("llama-perplexity on %s: exit %d\n%s" % (model, proc.returncode, proc.stderr[-2000:]))
            return None
        print("llama-perplexity on %s ended without its final estimate; once more" % model)
    return None


# llama-quantize's types as users download them, then ggml's 32-weight Q4_1, Q5_0 and Q5_1 made
# --pure (every matrix of that type; their mixes would hold K-quants).
FILES = (("F16", False), ("Q8_0", False), ("Q6_K", False), ("Q4_K_M", False), ("Q5_K_M", False),
         ("Q4_1", True), ("Q5_0", True), ("Q5_1", True))


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    vkf_perplexity, model_dir = sys.argv[1], sys.argv[2]
    npm_dir, tools_dir = os.path.abspath(sys.argv[3]), os.path.abspath(sys.argv[4])
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        gguf_compare.skip("llama.cpp's prebuilt libraries come for Linux x86-64 only")
    gguf, np = gguf_compare.gguf_modules(npm_dir, ("g++",))
    gguf_py = gguf_compare.gguf_py_dir(npm_dir)
    libs = os.path.dirname(ggml_reference.library(npm_dir))
    tools = build_tools(os.path.dirname(gguf_py), libs, tools_dir)
    text = os.path.join(model_dir, "heldout.txt")

    with tempfile.TemporaryDirectory(prefix="vkf_kquant_ppl_") as tmp:
        f16 = os.path.join(tmp, "kjv-bloom-f16.gguf")
        gguf_run_test.convert(gguf, np, model_dir, f16)
        for qtype, pure in FILES:
            path = f16 if qtype == "F16" else os.path.join(tmp, "kjv-bloom-%s.gguf" % qtype)
            if qtype != "F16":
                proc = subprocess.run([tools["llama-quantize"]] + (["--pure"] if pure else []) + [f16, path, qtype],
                                      capture_output=True, text=True, cwd=libs)
                if proc.returncode != 0:
                    fail("llama-quantize %s: exit %d\n%s" % (qtype, proc.returncode, proc.stderr[-2000:]))
                    continue
            types = sorted({t.tensor_type.name for t in gguf.GGUFReader(path).tensors if len(t.shape) == 2})
            if qtype.endswith("_M") and len(types) < 2:
                fail("%s: llama-quantize wrote matrices of one type only (%s): not a mix" % (qtype, types))
            args = ["--model", path, "--file", text, "--ctx", str(CTX), "--max-tokens", str(CTX * CHUNKS)]
            theirs = llama_ppl(tools["llama-perplexity"], libs, path, text)
            ours = run_json(vkf_perplexity, args)
            if theirs is None or ours is None:
                continue
            value = ours["results"][0]["perplexity"]
            rel = abs(value - theirs) / theirs
            print("%s (matrices %s): llama-perplexity %.4f, vkf-perplexity %.4f (weights %s), relative %.1e"
                  % (qtype, "+".join(types), theirs, value, ours.get("weights"), rel))
            if not rel <= BOUND:
                fail("%s: vkf-perplexity %.6f vs llama-perplexity %.6f differ by %.2e relative (bound %g)"
                     % (qtype, value, theirs, rel, BOUND))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
