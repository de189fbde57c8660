#!/usr/bin/env python3
"""Prints the Ninja targets a configured build needs for one CTest selection: its default
targets (Ninja's per-folder "all") less the test programs that only unselected CTest entries
run, so that a leg running a subset of the suites does not compile the others
(scripts/test_aarch64.sh: ~75 s of CPU in the cross-build).

usage: scripts/test_targets.py BUILD_DIR [ctest selection arguments: -E, -LE, ...]

A program is left out when it is the program of an unselected entry and no selected entry
names it anywhere (its command, arguments or properties): test_matmul_f16 stays while
test_matmul_f16_forced_off runs it, and helper programs (cache_probe) always stay. The
entries' commands come from the CTestTestfile.cmake files, written at configure time (ctest
--show-only prints no command for a program not built yet).
"""
import json
import pathlib
import re
import subprocess
import sys


def entries(build):
    """{test name: text of its add_test and set_tests_properties lines}"""
    lines = {}
    for f in pathlib.Path(build).rglob("CTestTestfile.cmake"):
        for line in f.read_text().splitlines():
            m = re.match(r"(add_test|set_tests_properties)\(\[=\[(.+?)\]=\]", line)
            if m:
                lines.setdefault(m.group(2), []).append(line)
    return lines


def program(build, lines):
    """The test program an entry runs, the first argument of its command in the build's tests/
    folder (after the emulator; a script test's programs are apps, always built): (the path as
    written, the path relative to build), or None."""
    add = next((line for line in lines if line.startswith("add_test(")), "")
    for arg in re.findall(r'"([^"]*)"', add):
        p = pathlib.Path(arg)
        if p.is_relative_to(build):
            relative = p.relative_to(build).as_posix()
            return (arg, relative) if relative.startswith("tests/") else None
    return None


def expand(build, target, unneeded):
    """(targets, touched): target itself, or where it is a phony .../all that holds an unneeded
    program, its inputs so expanded."""
    if target in unneeded:
        return [], True
    if target != "all" and not target.endswith("/all"):
        return [target], False
    query = subprocess.run(["ninja", "-C", build, "-t", "query", target], check=True, capture_output=True,
                           text=True).stdout.splitlines()
    targets, touched = [], False
    for line in query[2:]:  # "all:", "  input: phony", then the inputs indented by four spaces
        if not line.startswith("    "):
            break
        sub, sub_touched = expand(build, line.strip(), unneeded)
        targets += sub
        touched = touched or sub_touched
    return (targets if touched else [target]), touched


def main():
    build = pathlib.Path(sys.argv[1]).resolve()
    shown = subprocess.run(["ctest", "--test-dir", str(build), "--show-only=json-v1", *sys.argv[2:]], check=True,
                           capture_output=True, text=True).stdout
    selected = {t["name"] for t in json.loads(shown)["tests"]}
    tests = entries(build)
    selected_text = "\n".join(line for name in selected for line in tests.get(name, []))
    unneeded = set()
    for name, lines in tests.items():
        prog = program(build, lines)
        # The path whole: test_attention is not named by test_attention_paged's command.
        if name not in selected and prog and not re.search(re.escape(prog[0]) + r"(?![\w.+-])", selected_text):
            unneeded.add(prog[1])
    targets, _ = expand(str(build), "all", unneeded)
    print("\n".join(targets))
    print(f"test_targets: {len(unneeded)} test programs left out: {' '.join(sorted(unneeded))}", file=sys.stderr)


if __name__ == "__main__":
    main()
