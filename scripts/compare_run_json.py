#!/usr/bin/env python3
"""vkf-run --json of two builds on every topology (one device, --devices 0,0, mpirun -n 2),
one prompt and --prompt-file, compared key by key with the timings left out: a refactoring of
the orchestration layer (issue 41) must change neither the keys nor the values.

usage: compare_run_json.py OLD/vkf-run NEW/vkf-run MODEL_DIR [OUT_DIR]
Writes OUT_DIR/<config>.{old,new}.json; exits 1 naming every difference."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

OLD, NEW, MODEL = sys.argv[1:4]
OUT = sys.argv[4] if len(sys.argv) > 4 else tempfile.mkdtemp()
os.makedirs(OUT, exist_ok=True)
PROMPTS = os.path.join(OUT, "prompts.txt")
with open(PROMPTS, "w", encoding="utf-8") as f:
    f.write("And God said unto Moses,\nIn the beginning\nBlessed are the\n")

BASE = ["--model", MODEL, "--n-predict", "5", "--ignore-eos", "--chunk", "4", "--json", "--quiet"]
ONE = ["--prompt", "And God said, Let there be light: and"]
FILE = ["--prompt-file", PROMPTS, "--parallel", "2"]
CONFIGS = {
    "one": ([], ONE),
    "one_ids": ([], ["--prompt-ids", "1,2,3,4,5"]),
    "file": ([], FILE),
    "devices": ([], ONE + ["--devices", "0,0"]),
    "devices_file": ([], FILE + ["--devices", "0,0"]),
}
if shutil.which("mpirun"):
    MPI = ["mpirun", "-n", "2", "--oversubscribe"]
    CONFIGS["mpi"] = (MPI, ONE)
    CONFIGS["mpi_file"] = (MPI, FILE)

# Wall times, rates and what depends on them (memory in use, steps that overlapped by chance).
TIMING = ("seconds", "_ms", "per_second", "_bytes_in_use", "overlapped", "max_in_flight", "seconds_")
SKIP = {"load_seconds", "memory", "busy_ms", "prepare", "threads", "created", "pipelines"}


def timing(key):
    return key in SKIP or any(part in key for part in TIMING)


def diff(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a.keys()) != list(b.keys()):
            out.append("%s: keys %s != %s" % (path, list(a.keys()), list(b.keys())))
        for k in a:
            if k in b and not timing(k):
                diff(a[k], b[k], path + "." + k, out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append("%s: %d items != %d" % (path, len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, "%s[%d]" % (path, i), out)
    elif a != b:
        out.append("%s: %r != %r" % (path, a, b))


def run(binary, name, launcher, args):
    env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    p = subprocess.run(launcher + [binary] + BASE + args, capture_output=True, text=True, env=env, timeout=600)
    if p.returncode != 0:
        return None, "exit %d: %s" % (p.returncode, p.stderr[-2000:])
    return json.loads(p.stdout), None


failures = []
ONLY = os.environ.get("ONLY", "").split(",") if os.environ.get("ONLY") else None
for name, (launcher, args) in CONFIGS.items():
    if ONLY and name not in ONLY:
        continue
    got = {}
    for label, binary in (("old", OLD), ("new", NEW)):
        path = os.path.join(OUT, "%s.%s.json" % (name, label))
        if label == "old" and os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                got[label] = json.load(f)
            continue
        value, error = run(binary, name, launcher, args)
        if error:
            failures.append("%s (%s): %s" % (name, label, error))
            continue
        got[label] = value
        with open(path, "w", encoding="utf-8") as f:
            json.dump(value, f, indent=1)
    if len(got) == 2:
        out = []
        diff(got["old"], got["new"], name, out)
        failures += out
        print("%s: %s" % (name, "same" if not out else "%d differences" % len(out)))
for f in failures:
    print("FAIL " + f)
sys.exit(1 if failures else 0)
