#!/usr/bin/env python3
"""Checks the design documents against the tree (CTest's docs_check, first leg).

- docs/DESIGN.md stays a design a new engineer reads in half an hour: at most MAX_DESIGN_BYTES
  (measurements and CI logs go to docs/HISTORY.md or beside their result files, bench/results).
- Every section that a tracked file names, as docs/DESIGN.md "Threads", docs/DESIGN.md, Testing
  or docs/HISTORY.md ("CI time"), is the start of a heading of that document (case ignored), so
  renaming or dropping a section cannot leave code comments, scripts and docs pointing nowhere.
- Every relative link in README.md and docs/*.md leads to a file or folder that exists.

usage: scripts/check_docs.py [SOURCE_DIR]   (default: the folder above this script)
Prints each problem with its file and line and exits 1 when there is one.
"""

import os
import re
import subprocess
import sys

MAX_DESIGN_BYTES = 40000
DOCS = ("DESIGN.md", "HISTORY.md")
# DESIGN.md "Name", DESIGN.md ("Name"), DESIGN.md, "Name", DESIGN.md's "Name"
QUOTED = re.compile(r'\b(DESIGN|HISTORY)\.md(?:\'s)?,?\s*\(?"([^"]{1,80})"')
# DESIGN.md, Name words) -- the name ends at punctuation; a comment's line break may cut it.
UNQUOTED = re.compile(r'\b(DESIGN|HISTORY)\.md, ([A-Za-z][A-Za-z0-9 _-]*)')
LINK = re.compile(r"\]\(([^)\s]+)\)")


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True).stdout
        return [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for top, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
            files += [os.path.relpath(os.path.join(top, n), root) for n in names]
        return files


def headings(path):
    with open(path, encoding="utf-8") as f:
        return [line.lstrip("#").strip().lower() for line in f if line.startswith("#")]


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    problems = []
    design = os.path.join(root, "docs", "DESIGN.md")
    size = os.path.getsize(design)
    if size > MAX_DESIGN_BYTES:
        problems.append(f"docs/DESIGN.md: {size} bytes, over the {MAX_DESIGN_BYTES} a design may take; "
                        "move measurements and histories to docs/HISTORY.md or bench/results")
    titles = {doc.split(".")[0]: headings(os.path.join(root, "docs", doc)) for doc in DOCS}
    checked = 0
    for rel in tracked_files(root):
        # HISTORY.md quotes the old DESIGN.md's section names as it found them; this script
        # quotes the patterns it looks for.
        if rel in ("docs/HISTORY.md", "scripts/check_docs.py") or not os.path.isfile(os.path.join(root, rel)):
            continue
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        for pattern in (QUOTED, UNQUOTED):
            for m in pattern.finditer(text):
                # A name broken over two lines of a comment: "Model\n// families".
                name = re.sub(r"\s*\n\s*(?://|#|\*)?\s*", " ", m.group(2)).strip()
                doc = m.group(1)
                if pattern is UNQUOTED and name.split()[0].lower() in ("the", "a", "an", "see"):
                    continue  # prose after the name, not a section name
                checked += 1
                if not any(t.startswith(name.lower()) for t in titles[doc]):
                    line = text.count("\n", 0, m.start()) + 1
                    problems.append(f"{rel}:{line}: docs/{doc}.md has no section \"{name}\"")
        if rel == "README.md" or (rel.startswith("docs/") and rel.endswith(".md")):
            for m in LINK.finditer(text):
                target = m.group(1).split("#")[0]
                if not target or re.match(r"^[a-z]+:", target):
                    continue
                if not os.path.exists(os.path.join(root, os.path.dirname(rel), target)):
                    line = text.count("\n", 0, m.start()) + 1
                    problems.append(f"{rel}:{line}: link to {m.group(1)}, which does not exist")
    for p in problems:
        print(p)
    print(f"check_docs: DESIGN.md {size} bytes, {checked} section references, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
