#!/usr/bin/env python3
"""Runs a test program against llama.cpp's prebuilt ggml library (libggml-base.so), which the
npm package @node-llama-cpp/linux-x64 carries: the package is installed (--ignore-scripts) into
NPM_DIR/ggml-prebuilt on first use and the program run with VKF_GGML_LIB naming the library.
VKF_GGML_LIB already set in the environment names another copy and skips the install.

usage: ggml_reference.py PROGRAM NPM_DIR [ARGS...]
Exit 77 (skipped) off Linux x86-64 (the package is built for it only), without npm, or when
npm cannot install the package; otherwise the program's exit status.
"""

import json
import os
import platform
import subprocess
import sys

PACKAGE = ("@node-llama-cpp/linux-x64", "3.22.1")


def skip(message):
    print("SKIPPED: " + message)
    sys.exit(77)


def library(npm_dir):
    """libggml-base.so of the pinned package, installed on first use into a prefix of its own
    inside `npm_dir`: installed beside node-llama-cpp (tests/io/gguf_compare.py) it would make
    npm fetch that package's optional prebuilt binaries for every platform (650 MB, CUDA's)."""
    name, version = PACKAGE
    npm_dir = os.path.join(npm_dir, "ggml-prebuilt")
    folder = os.path.join(npm_dir, "node_modules", *name.split("/"))
    manifest = os.path.join(folder, "package.json")
    installed = None
    if os.path.exists(manifest):
        with open(manifest, encoding="utf-8") as f:
            installed = json.load(f).get("version")
    if installed != version:
        os.makedirs(npm_dir, exist_ok=True)
        try:
            proc = subprocess.run(["npm", "install", "--prefix", npm_dir, "--ignore-scripts", "--no-audit",
                                   "--no-fund", "--omit=optional", "%s@%s" % (name, version)],
                                  capture_output=True, text=True, timeout=600)
        except FileNotFoundError:
            skip("npm is not installed, so %s@%s (llama.cpp's ggml library) cannot be had" % (name, version))
        except subprocess.TimeoutExpired:
            skip("npm install %s@%s took over 10 minutes" % (name, version))
        if proc.returncode != 0 or not os.path.exists(manifest):
            skip("npm could not install %s@%s (registry unreachable?):\n%s"
                 % (name, version, proc.stderr.strip()[-2000:]))
    path = os.path.join(folder, "bins", "linux-x64", "libggml-base.so")
    if not os.path.exists(path):
        sys.exit("%s@%s has no %s" % (name, version, path))
    return path


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    program, npm_dir = sys.argv[1], sys.argv[2]
    env = dict(os.environ)
    if not env.get("VKF_GGML_LIB"):
        if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
            skip("llama.cpp's prebuilt ggml library is taken from %s, built for Linux x86-64 only" % PACKAGE[0])
        if os.environ.get("VKF_TEST_EMULATOR"):
            # A cross-built program (scripts/test_aarch64.sh) cannot load an x86-64 library.
            skip("the program is cross-built (run under %s); %s is built for Linux x86-64 only"
                 % (os.environ["VKF_TEST_EMULATOR"], PACKAGE[0]))
        env["VKF_GGML_LIB"] = library(npm_dir)
    print("ggml library: " + env["VKF_GGML_LIB"], flush=True)
    sys.exit(subprocess.run([program] + sys.argv[3:], env=env).returncode)


if __name__ == "__main__":
    main()
