"""llama.cpp's own logits for a GGUF file: llama_logits.cpp compiled once (seconds) against the
llama.cpp headers of npm's node-llama-cpp and the prebuilt libraries of @node-llama-cpp/linux-x64
(as kquant_perplexity_test.py compiles llama-perplexity), run from the libraries' folder."""

import os
import platform
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "quant"))
import ggml_reference  # noqa: E402  (the prebuilt libraries)
from kquant_perplexity_test import lib_flag  # noqa: E402


def unavailable():
    """Why llama.cpp cannot run here, or None."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return "llama.cpp's prebuilt libraries come for Linux x86-64 only"
    if shutil.which("g++") is None:
        return "g++ is not installed"
    return None


def build(npm_dir, gguf_py):
    """(tool, libs): llama_logits built into npm_dir/llama-logits unless already built there
    from this source against these libraries."""
    libs = os.path.dirname(ggml_reference.library(npm_dir))
    source = os.path.dirname(gguf_py)
    program = os.path.join(HERE, "llama_logits.cpp")
    out_dir = os.path.join(npm_dir, "llama-logits")
    os.makedirs(out_dir, exist_ok=True)
    tool, stamp = os.path.join(out_dir, "llama_logits"), os.path.join(out_dir, "built-for.txt")
    with open(program, encoding="utf-8") as f:
        key = "%s\n%s" % (libs, f.read())
    built_for = open(stamp, encoding="utf-8").read() if os.path.exists(stamp) else None
    if not os.path.exists(tool) or built_for != key:
        cmd = (["g++", "-O1", "-std=c++17", "-I" + os.path.join(source, "include"),
                "-I" + os.path.join(source, "ggml", "include"), program, "-L" + libs]
               + [lib_flag(libs, s) for s in ("libllama", "libggml", "libggml-base")]
               + ["-Wl,-rpath," + libs, "-o", tool + ".tmp"])
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError("compiling llama_logits failed:\n%s" % proc.stderr[-3000:])
        os.replace(tool + ".tmp", tool)
        with open(stamp, "w", encoding="utf-8") as f:
            f.write(key)
    return tool, libs


def logits(np, tool, libs, model, ids, out):
    """float32 [len(ids), n_vocab]: llama.cpp's logits at every position of `ids`."""
    proc = subprocess.run([tool, model, ",".join(str(i) for i in ids), out], capture_output=True, text=True,
                          cwd=libs, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError("llama_logits %s: exit %d\n%s" % (model, proc.returncode, proc.stderr[-2000:]))
    n, vocab = (int(x) for x in proc.stdout.split())
    return np.fromfile(out, dtype=np.float32).reshape(n, vocab)
