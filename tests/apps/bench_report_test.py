#!/usr/bin/env python3
"""Browser test of `vkf-bench report`: the page of this machine's result files
(bench/results), of a sustained-mode `vkf-bench llama` run on kjv-bloom and of llama-bench's
own rows (tests/apps/data/llama_bench), opened in Debian's chromium, headless, over the
DevTools protocol (tests/support/chromium_cdp.py). The page must load without a message in
the console, every figure cell's exact value (data-value) must be the JSON's and its shown
text must round to it, every ok result must have its median on the page, the suites' plots
and the sustained curve must be inline. The screenshot is kept in ARTIFACT_DIR.

Exit 77 (skipped) without chromium (scripts/deps.sh installs Debian's).

usage: bench_report_test.py PATH/TO/vkf-bench SOURCE_DIR ARTIFACT_DIR
"""

import glob
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from chromium_cdp import Browser, chromium_path  # noqa: E402
from cli_checks import fail, failures, run  # noqa: E402

EXE, SOURCE, ARTIFACTS = sys.argv[1:4]

CELLS = """[...document.querySelectorAll('td[data-value]')].map(td =>
  [Number(td.dataset.file), td.dataset.case, td.dataset.field, td.dataset.value, td.textContent])"""


def run_files():
    """This machine's vkf-bench run result files (bench/results also holds other programs' JSON)."""
    files = []
    for path in sorted(glob.glob(os.path.join(SOURCE, "bench", "results", "**", "*.json"), recursive=True)):
        with open(path) as f:
            document = json.load(f)
        if isinstance(document, dict) and document.get("schema") == "vkformer-bench-result":
            files.append(path)
    return files


def expected_value(document, case, field):
    """The JSON's number for a figure cell; None where the page computes it (a ratio)."""
    if isinstance(document, list):  # llama rows
        return document[int(case)].get(field)
    if case == "ceilings":
        return document["ceilings"].get(field)
    suite, name = case.split("/", 1)
    result = next(r for r in document["results"] if r["suite"] == suite and r["name"] == name)
    if field == "median_ms":
        return result["stats_ms"]["median"]
    if field == "speed_vs_first":
        return None
    return result[field]


def main():
    if chromium_path() is None:
        print("skipped: no chromium (scripts/deps.sh installs Debian's)")
        sys.exit(77)
    os.makedirs(ARTIFACTS, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        llama = os.path.join(tmp, "kjv-bloom-sustained.json")
        proc = run(EXE, ["llama", "-m", os.path.join(SOURCE, "models", "kjv-bloom"), "-p", "8", "-n", "4",
                         "--sustained", "3", "--check-tokens", "4", "--bandwidth", "5", "-o", "json", "--out", llama])
        if proc.returncode != 0:
            fail("vkf-bench llama exited %d: %s" % (proc.returncode, proc.stderr))
            return
        llama_bench = os.path.join(SOURCE, "tests", "apps", "data", "llama_bench", "kjv-bloom-cpu.json")
        files = run_files() + [llama, llama_bench]
        if len(files) < 4:
            fail("only %d result files in bench/results" % (len(files) - 2))
        documents = []
        for path in files:
            with open(path) as f:
                documents.append(json.load(f))
        page = os.path.join(tmp, "report.html")
        proc = run(EXE, ["report"] + files + ["--out", page])
        if proc.returncode != 0:
            fail("vkf-bench report exited %d: %s" % (proc.returncode, proc.stderr))
            return
        with open(page) as f:
            html = f.read()
        for forbidden in ("<script", "http://", "https://"):
            if forbidden in html.replace('xmlns="http://www.w3.org/2000/svg"', ""):
                fail("the report holds %r: it must be self-contained" % forbidden)
        with Browser(width=1400, height=1000) as browser:
            tab = browser.open("file://" + page)
            cells = browser.evaluate(tab, CELLS)
            svgs = browser.evaluate(tab, "document.querySelectorAll('svg').length")
            curve = browser.evaluate(tab, "[...document.querySelectorAll('#llama svg polyline')].map("
                                          "p => p.getAttribute('points').trim().split(' ').length)")
            browser.screenshot(tab, os.path.join(ARTIFACTS, "bench-report.png"))
            browser.pump(0.3)
            errors = browser.console_errors()
        if errors:
            fail("the console of the report: %s" % errors)
        checked = 0
        medians = set()
        for file_index, case, field, value, text in cells:
            want = expected_value(documents[file_index], case, field)
            shown = float(text)
            exact = float(value)
            if want is not None:
                checked += 1
                if abs(exact - want) > 1e-12 * abs(want):
                    fail("%s %s %s: data-value %s, the JSON %r" % (files[file_index], case, field, value, want))
            if abs(shown - exact) > 0.051 * abs(exact):
                fail("%s %s %s: shown %s for %s" % (files[file_index], case, field, text, value))
            if field == "median_ms":
                medians.add((file_index, case))
        for i, document in enumerate(documents):
            if isinstance(document, dict):
                for r in document["results"]:
                    if r["status"] == "ok" and (i, r["suite"] + "/" + r["name"]) not in medians:
                        fail("%s: %s %s has no median on the page" % (files[i], r["suite"], r["name"]))
            else:
                for row in range(len(document)):
                    if not any(c[0] == i and c[1] == str(row) and c[2] == "avg_ts" for c in cells):
                        fail("%s: row %d has no t/s on the page" % (files[i], row))
        if checked < 100:
            fail("only %d figures checked against the JSON" % checked)
        if svgs < 3 or curve != [3, 3]:
            fail("%d inline SVGs, sustained curves of %s points (expected pp8 and tg4, 3 each)" % (svgs, curve))
        print("%d figures checked, %d SVGs" % (checked, svgs))


if __name__ == "__main__":
    main()
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("ok")
