#!/usr/bin/env python3
"""Checks what may include what (docs/DESIGN.md "Layers"; CTest's layers_check, first leg).

- base/ (vkf::Error, the file rules, the text of numbers: what every layer shares) includes
  nothing from runtime/, host/, shaders/, apps/, capi/ or bindings/.
- runtime/ includes nothing from host/, apps/, capi/ or bindings/: it must stay usable on its
  own for other compute work.
- The Vulkan-free host libraries (util, io, spec, quant, reference, text, serve) include
  nothing from runtime/ (they take vkf::Error from base/) and nothing from the GPU layers
  (host/ops, host/model, host/dist) or apps/.
- host/ and shaders/ include nothing from apps/ or capi/.

usage: scripts/check_layers.py [SOURCE_DIR]   (default: the folder above this script)
Prints each include that breaks a rule, with its file and line, and exits 1 when there is one.
"""

import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
SOURCES = (".cpp", ".hpp", ".h", ".c", ".glsl", ".comp")
VULKAN_FREE = ("host/util/", "host/io/", "host/spec/", "host/quant/", "host/reference/", "host/text/", "host/serve/")

# (files whose path starts with one of these, the includes they may not have, why)
RULES = [
    (("base/",), lambda inc: inc.startswith(("runtime/", "host/", "shaders/", "apps/", "capi/", "bindings/")),
     "base/ includes nothing from the layers above it"),
    (("runtime/",), lambda inc: inc.startswith(("host/", "apps/", "capi/", "bindings/")),
     "runtime/ includes nothing from the layers above it"),
    (VULKAN_FREE, lambda inc: inc.startswith("runtime/"),
     "a Vulkan-free host library includes nothing from runtime/ (vkf::Error is base/error.hpp)"),
    (VULKAN_FREE, lambda inc: inc.startswith(("host/ops/", "host/model/", "host/dist/", "apps/", "capi/")),
     "a Vulkan-free host library includes nothing from the GPU layers or the programs"),
    (("host/", "shaders/"), lambda inc: inc.startswith(("apps/", "capi/")),
     "the libraries include nothing from the programs or the C API"),
]


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    problems = []
    files = 0
    for top in ("base", "runtime", "host", "shaders"):
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                files += 1
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for m in INCLUDE.finditer(text):
                    for prefixes, forbidden, why in RULES:
                        if rel.startswith(prefixes) and forbidden(m.group(1)):
                            line = text.count("\n", 0, m.start()) + 1
                            problems.append(f"{rel}:{line}: includes \"{m.group(1)}\": {why}")
    for p in problems:
        print(p)
    print(f"check_layers: {files} files, {len(problems)} includes against the layering")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
