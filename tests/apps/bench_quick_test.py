#!/usr/bin/env python3
"""Smoke test of vkf-bench: runs `vkf-bench attention --quick --json` and checks that the
output is one JSON document with at least 4 results, none failed, each timed; also checks
the exit codes of --help and of bad command lines.

--quick's prefill lengths (256 and 1024) take minutes on lavapipe, whose 1024-token case
alone needs about 20 s per submission, so the test shortens them to 64 and 256 (options
given explicitly win over --quick) to stay near 30 s there.

usage: bench_quick_test.py PATH/TO/vkf-bench
"""

import json
import subprocess
import sys

from cli_checks import command

QUICK_ARGS = ["attention", "--quick", "--json", "--lengths", "64,256"]


def run(exe, args):
    return subprocess.run(command(exe, args), capture_output=True, text=True, timeout=600)


def check_quick(exe):
    """Failure messages for the --quick --json run (empty when it passed)."""
    proc = run(exe, QUICK_ARGS)
    if proc.returncode != 0:
        return ["exit code %d\nstderr:\n%s" % (proc.returncode, proc.stderr)]
    try:
        document = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        return ["stdout is not JSON (%s):\n%s" % (e, proc.stdout)]
    problems = []
    for key in ("vkformer_version", "device", "effective_limits", "settings", "results"):
        if key not in document:
            problems.append("no %r in the document" % key)
    results = document.get("results", [])
    if len(results) < 4:
        problems.append("%d results, expected at least 4" % len(results))
    for i, result in enumerate(results):
        name = "result %d (%s %s d=%s q=%s kv=%s)" % (i + 1, result.get("mode"), result.get("dtype"),
                                                       result.get("head_dim"), result.get("q_len"),
                                                       result.get("kv_len"))
        if result.get("failed") is not False:
            problems.append("%s failed: %s" % (name, result.get("error")))
            continue
        median = result.get("tiled_ms_median")
        if not isinstance(median, (int, float)) or median <= 0:
            problems.append("%s has tiled_ms_median %r" % (name, median))
        if not isinstance(result.get("plan"), dict):
            problems.append("%s has no plan" % name)
    dtypes = {result.get("dtype") for result in results}
    if dtypes != {"f32", "f16"}:
        problems.append("--quick covered dtypes %s, expected f32 and f16" % sorted(dtypes))
    if not problems:
        print("ok: %d results, dtypes %s" % (len(results), sorted(dtypes)))
    return problems


def check_exit_codes(exe):
    problems = []
    for args, code in ((["attention", "--help"], 0), (["--help"], 0), (["attention", "--no-such-option"], 2),
                       (["no-such-benchmark"], 2), (["attention", "--dtype", "f64"], 2), ([], 2)):
        proc = run(exe, args)
        if proc.returncode != code:
            problems.append("%s: exit code %d, expected %d\nstderr: %s" % (" ".join(args) or "(no arguments)",
                                                                           proc.returncode, code, proc.stderr))
    return problems


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    problems = check_exit_codes(sys.argv[1]) + check_quick(sys.argv[1])
    for problem in problems:
        print("FAIL: " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
