#!/usr/bin/env python3
"""vkformer's GGUF writer (host/io/gguf_writer.hpp, through tests/io/gguf_write_sample) read by
llama.cpp's own reader, gguf-py (npm node-llama-cpp, installed as gguf_compare.py installs it).

The sample of tests/io/gguf_writer_sample.hpp is written with no general.alignment and with 64 and
256; gguf-py must read every key with its type and value, every tensor's name, shape (innermost
first), type and bytes ((i * 7 + index * 13) mod 256), each tensor starting at a multiple of the
alignment.

usage: gguf_write_compare.py GGUF_WRITE_SAMPLE NPM_DIR
Exit 77 (skipped) when node, npm, git or numpy is missing or npm cannot install the package.
"""

import importlib.util
import os
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile

import gguf_compare

KEYS = [
    ("general.architecture", "STRING", "bloom"),
    ("test.uint8", "UINT8", 250), ("test.int8", "INT8", -100), ("test.uint16", "UINT16", 65000),
    ("test.int16", "INT16", -30000), ("test.uint32", "UINT32", 4000000000), ("test.int32", "INT32", -2000000000),
    ("test.float32", "FLOAT32", struct.unpack("<f", struct.pack("<f", 0.1))[0]), ("test.bool", "BOOL", True),
    ("test.string", "STRING", "\u00dcn\u00efc\u00f6d\u00e9 text"), ("test.uint64", "UINT64", 2 ** 64 - 1),
    ("test.int64", "INT64", -2 ** 62), ("test.float64", "FLOAT64", 1.0 / 3.0),
    ("test.array.uint8", "UINT8", [0, 255]), ("test.array.int32", "INT32", [-5, 5, 7]),
    ("test.array.float32", "FLOAT32", [0.5, struct.unpack("<f", struct.pack("<f", -1e30))[0]]),
    ("test.array.bool", "BOOL", [True, False]), ("test.array.string", "STRING", ["a", "", "\u0120the\u010a"]),
    ("test.array.float64", "FLOAT64", [1e300]),
]
TENSORS = [("t.f32", [64, 6], "F32", 64 * 6 * 4), ("t.f16", [64, 6], "F16", 64 * 6 * 2),
           ("t.q8_0", [64, 6], "Q8_0", 2 * 6 * 34), ("t.q4_0", [96, 5], "Q4_0", 3 * 5 * 18),
           ("t.1d", [7], "F32", 28), ("t.3d", [4, 3, 2], "F16", 48)]


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    tool, npm_dir = sys.argv[1], os.path.abspath(sys.argv[2])
    for program in ("node", "npm", "git"):
        if shutil.which(program) is None:
            gguf_compare.skip("%s is not installed" % program)
    if importlib.util.find_spec("numpy") is None:  # gguf-py needs it
        gguf_compare.skip("numpy is not installed for %s" % sys.executable)
    sys.path.insert(0, gguf_compare.gguf_py_dir(npm_dir))
    import gguf

    check = gguf_compare.Checker()
    with tempfile.TemporaryDirectory(prefix="vkf_gguf_write_compare_") as tmp:
        for alignment in (0, 64, 256):
            path = os.path.join(tmp, "sample-%d.gguf" % alignment)
            args = shlex.split(os.environ.get("VKF_TEST_EMULATOR", "")) + [tool, path, str(alignment)]
            proc = subprocess.run(args, capture_output=True, text=True)
            if proc.returncode != 0:
                check.equal(path + ": gguf_write_sample exit status", proc.returncode, 0)
                print(proc.stderr)
                continue
            reader = gguf.GGUFReader(path)
            keys = KEYS + ([("general.alignment", "UINT32", alignment)] if alignment else [])
            fields = {k: f for k, f in reader.fields.items() if not k.startswith("GGUF.")}
            check.equal(path + ": keys in order", list(fields), [k for k, _, _ in keys])
            for key, type_name, value in keys:
                field = fields.get(key)
                if field is None:
                    continue
                check.equal(key + " type", field.types[-1].name, type_name)
                check.equal(key, field.contents(), value)
            check.equal(path + ": alignment", reader.alignment, alignment or 32)
            check.equal(path + ": tensors", [t.name for t in reader.tensors], [t[0] for t in TENSORS])
            for index, (t, (name, dims, type_name, size)) in enumerate(zip(reader.tensors, TENSORS)):
                check.equal(name + " dims", [int(d) for d in t.shape], dims)
                check.equal(name + " type", t.tensor_type.name, type_name)
                check.equal(name + " aligned", int(t.data_offset) % (alignment or 32), 0)
                want = bytes((i * 7 + index * 13) % 256 for i in range(size))
                check.equal(name + " bytes", bytes(t.data.tobytes()) == want, True)
    print("3 files compared, %d mismatches" % check.failures)
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
