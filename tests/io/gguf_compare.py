#!/usr/bin/env python3
"""vkformer's GGUF reader (host/io/gguf.hpp, through tests/io/gguf_dump) against llama.cpp's own
writer and reader, gguf-py.

gguf-py comes from the npm package node-llama-cpp, which carries llama.cpp's source as a git
bundle: the package is installed (--ignore-scripts: nothing is built) into NPM_DIR and the
bundle cloned beside it. The script writes GGUF files with gguf-py's GGUFWriter (metadata of
every value type, arrays of each, tensors of F32, F16, I8, I32 and Q8_0, Q4_0 made by gguf-py's
own quantize functions, and a custom alignment), then checks that gguf_dump reads the same keys,
value types, values, tensor names, shapes, types, offsets and bytes, and that it refuses the
big-endian file the writer also makes.

usage: gguf_compare.py GGUF_DUMP NPM_DIR
Exit 77 (skipped) when node, npm, git or numpy is missing or npm cannot install the package.
"""

import json
import os
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile

PACKAGE = ("node-llama-cpp", "3.22.1")


def skip(message):
    print("SKIPPED: " + message)
    sys.exit(77)


def gguf_py_dir(npm_dir):
    """gguf-py of the pinned node-llama-cpp, installed and unpacked on first use."""
    name, version = PACKAGE
    folder = os.path.join(npm_dir, "node_modules", name)
    manifest = os.path.join(folder, "package.json")
    installed = None
    if os.path.exists(manifest):
        with open(manifest, encoding="utf-8") as f:
            installed = json.load(f).get("version")
    if installed != version:
        os.makedirs(npm_dir, exist_ok=True)
        try:
            proc = subprocess.run(["npm", "install", "--prefix", npm_dir, "--ignore-scripts", "--no-audit",
                                   # Only the package's llama.cpp source is read: not its prebuilt
                                   # binaries for every platform (900 MB with them, CUDA's included).
                                   "--omit=optional", "--no-fund", "%s@%s" % (name, version)],
                                  capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            skip("npm install %s@%s took over 10 minutes" % (name, version))
        if proc.returncode != 0 or not os.path.exists(manifest):
            skip("npm could not install %s@%s (registry unreachable?):\n%s"
                 % (name, version, proc.stderr.strip()[-2000:]))
    source = os.path.join(npm_dir, "llama.cpp-" + version)
    if not os.path.isdir(os.path.join(source, "gguf-py")):
        bundle = os.path.join(folder, "llama", "gitRelease.bundle")
        if not os.path.exists(bundle):
            skip("%s@%s carries no llama.cpp source (no %s)" % (name, version, bundle))
        shutil.rmtree(source, ignore_errors=True)
        proc = subprocess.run(["git", "clone", "--quiet", bundle, source], capture_output=True, text=True)
        if proc.returncode != 0:
            skip("git could not unpack llama.cpp from %s:\n%s" % (bundle, proc.stderr.strip()[-2000:]))
    return os.path.join(source, "gguf-py")


def gguf_modules(npm_dir, programs=()):
    """(gguf, numpy): gguf-py of the pinned node-llama-cpp (gguf_py_dir) and numpy, imported;
    skips (77) without node, npm, git, `programs` or numpy."""
    for program in ("node", "npm", "git") + tuple(programs):
        if shutil.which(program) is None:
            skip("%s is not installed (scripts/deps.sh installs Node.js and npm)" % program)
    try:
        import numpy
    except ImportError:
        skip("numpy is not installed for %s (gguf-py needs it)" % sys.executable)
    folder = gguf_py_dir(npm_dir)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    import gguf
    return gguf, numpy


def dump(tool, path, tensor_dir=None):
    # In a cross-build the tool runs under the emulator (VKF_TEST_EMULATOR, as tests/apps' cli_checks).
    args = shlex.split(os.environ.get("VKF_TEST_EMULATOR", "")) + [tool, path] + ([tensor_dir] if tensor_dir else [])
    proc = subprocess.run(args, capture_output=True, text=True)
    return proc.returncode, proc.stdout.strip(), proc.stderr.strip()


class Checker:
    def __init__(self):
        self.failures = 0

    def equal(self, what, ours, theirs):
        if ours != theirs:
            self.failures += 1
            print("MISMATCH %s: vkformer %r, gguf-py %r" % (what, ours, theirs))


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def write_files(gguf, np, tmp):
    """The files to compare, and what was put into each: {path: (metadata, tensors)}."""
    T = gguf.GGUFValueType
    Q = gguf.GGMLQuantizationType
    rng = np.random.default_rng(20261129)
    scalars = [
        ("test.uint8", 250, T.UINT8), ("test.int8", -100, T.INT8), ("test.uint16", 65000, T.UINT16),
        ("test.int16", -30000, T.INT16), ("test.uint32", 4000000000, T.UINT32),
        ("test.int32", -2000000000, T.INT32), ("test.float32", 0.1, T.FLOAT32),
        ("test.bool", True, T.BOOL), ("test.string", "Ünïcödé text", T.STRING),
        ("test.uint64", 2 ** 64 - 1, T.UINT64), ("test.int64", -2 ** 63, T.INT64),
        ("test.float64", 1.0 / 3.0, T.FLOAT64),
    ]
    arrays = [
        ("test.array.uint8", [0, 1, 255], T.UINT8), ("test.array.int8", [-128, 0, 127], T.INT8),
        ("test.array.uint16", [0, 65535], T.UINT16), ("test.array.int16", [-32768, 32767], T.INT16),
        ("test.array.uint32", [7, 2 ** 32 - 1], T.UINT32), ("test.array.int32", [-5, 5], T.INT32),
        ("test.array.float32", [0.5, -1e30, 3.25], T.FLOAT32), ("test.array.bool", [True, False], T.BOOL),
        ("test.array.string", ["a", "", "ĠtheĊ", "日本"], T.STRING),
        ("test.array.uint64", [2 ** 63], T.UINT64), ("test.array.int64", [-1, 2 ** 62], T.INT64),
        ("test.array.float64", [1e300, -0.0], T.FLOAT64),
    ]
    base = rng.standard_normal((6, 64)).astype(np.float32)
    tensors = [
        ("t.f32", base, None, [6, 64], "F32"),
        ("t.f16", base.astype(np.float16), None, [6, 64], "F16"),
        ("t.i8", rng.integers(-128, 127, (3, 5), dtype=np.int8), None, [3, 5], "I8"),
        ("t.i32", rng.integers(-1000, 1000, (7,), dtype=np.int32), None, [7], "I32"),
        ("t.q8_0", gguf.quants.quantize(base, Q.Q8_0), Q.Q8_0, [6, 64], "Q8_0"),
        ("t.q4_0", gguf.quants.quantize(base, Q.Q4_0), Q.Q4_0, [6, 64], "Q4_0"),
        ("t.3d", rng.standard_normal((2, 3, 4)).astype(np.float32), None, [2, 3, 4], "F32"),
    ]
    files = {}
    for alignment in (None, 64):
        path = os.path.join(tmp, "every-%s.gguf" % (alignment or "default"))
        writer = gguf.GGUFWriter(path, "bloom")
        if alignment:
            writer.add_custom_alignment(alignment)
        for key, value, vtype in scalars:
            writer.add_key_value(key, value, vtype)
        for key, values, vtype in arrays:
            writer.add_key_value(key, values, T.ARRAY, sub_type=vtype)
        for name, data, raw, _, _ in tensors:
            writer.add_tensor(name, data, raw_dtype=raw)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        files[path] = (scalars, arrays, tensors, alignment or 32)
    return files


def compare_file(gguf, np, tool, path, expected, tmp, check):
    scalars, arrays, tensors, alignment = expected
    tensor_dir = os.path.join(tmp, os.path.basename(path) + ".tensors")
    os.makedirs(tensor_dir)
    rc, out, err = dump(tool, path, tensor_dir)
    if rc != 0:
        check.equal(path + ": gguf_dump exit status", rc, 0)
        print(out, err)
        return
    ours = json.loads(out)
    check.equal(path + ": version", ours["version"], 3)
    check.equal(path + ": alignment", ours["alignment"], alignment)
    meta = {m["key"]: m for m in ours["metadata"]}
    check.equal(path + ": general.architecture", meta.get("general.architecture", {}).get("value"), "bloom")
    for key, value, vtype in scalars:
        m = meta.get(key, {})
        check.equal(key + " type", m.get("type"), vtype.name.lower())
        want = f32(value) if vtype == gguf.GGUFValueType.FLOAT32 else value
        check.equal(key, m.get("value"), want)
    for key, values, vtype in arrays:
        m = meta.get(key, {})
        check.equal(key + " type", (m.get("type"), m.get("element_type")), ("array", vtype.name.lower()))
        want = [f32(v) for v in values] if vtype == gguf.GGUFValueType.FLOAT32 else values
        check.equal(key, m.get("value"), want)

    # gguf-py's reader for where the bytes lie (absolute offsets, ggml dimension order).
    reader = gguf.GGUFReader(path)
    theirs = {t.name: t for t in reader.tensors}
    check.equal(path + ": tensor names in order", [t["name"] for t in ours["tensors"]], [t[0] for t in tensors])
    for i, t in enumerate(ours["tensors"]):
        name = t["name"]
        _, data, _, shape, type_name = tensors[i]
        ref = theirs[name]
        check.equal(name + " shape", t["shape"], shape)
        check.equal(name + " shape (gguf-py's reader, innermost first)", t["shape"][::-1],
                    [int(d) for d in ref.shape])
        check.equal(name + " type", t["type"], type_name)
        check.equal(name + " type (gguf-py's reader)", t["type"], ref.tensor_type.name)
        check.equal(name + " file offset", ours["data_offset"] + t["offset"], int(ref.data_offset))
        check.equal(name + " byte size", t["byte_size"], int(ref.n_bytes))
        with open(os.path.join(tensor_dir, "%d.bin" % i), "rb") as f:
            got = f.read()
        check.equal(name + " bytes", got == data.tobytes(), True)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    tool, npm_dir = sys.argv[1], os.path.abspath(sys.argv[2])
    gguf, np = gguf_modules(npm_dir)

    check = Checker()
    with tempfile.TemporaryDirectory(prefix="vkf_gguf_compare_") as tmp:
        files = write_files(gguf, np, tmp)
        for path, expected in files.items():
            compare_file(gguf, np, tool, path, expected, tmp, check)

        big = os.path.join(tmp, "big-endian.gguf")
        writer = gguf.GGUFWriter(big, "bloom", endianess=gguf.GGUFEndian.BIG)
        writer.add_tensor("t", np.ones((2, 32), dtype=np.float32))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        rc, out, _ = dump(tool, big)
        check.equal("big-endian file refused", (rc, "big-endian GGUF file" in out), (1, True))

    print("%d files compared, %d mismatches" % (len(files) + 1, check.failures))
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
