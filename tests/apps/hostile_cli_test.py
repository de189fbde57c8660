#!/usr/bin/env python3
"""Hostile input through the programs (issue 16), as a user would meet it: FIFOs and
directories where files are expected, a shard reached through a symbolic link, sizes that
wrap, JSON built to amplify memory, NaN weights, a sparse 100 GB .npy, a full disk under
every writer. Every check failed before its fix (hung, crashed, misreported or lost data);
each program run here has a time limit, so a hang is a failure, not a stuck job.

usage: hostile_cli_test.py PATH/TO/vkf-run PATH/TO/vkf-make-checkpoint PATH/TO/vkf-attention"""

import json
import os
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

from cli_checks import command, fail, finish

RUN, MAKE, ATTENTION = sys.argv[1], sys.argv[2], sys.argv[3]
TIME_LIMIT = 120


# A full disk for the programs that use Vulkan: a 64 KiB tmpfs in a private mount namespace
# (unshare: as root, or inside a user namespace), filled to the last block, holding the directory
# the program writes to; its writes fail with ENOSPC, as on a real full disk. The file-size limit
# (RLIMIT_FSIZE), which vkf-make-checkpoint's check uses, cannot stand in for it there: Mesa 25's
# lavapipe backs device memory with a memfd that it grows with an unchecked ftruncate, so under
# the limit the driver faults (SIGBUS) on its own mapping. Only processes in the namespace see the
# mount, so the script lists the target directory into a report file after the program.
FULL_DISK_SCRIPT = r"""mount -t tmpfs -o size=64k,mode=0755 vkf-full-disk "$1" || exit 97
mkdir "$1/target" || exit 97
cat /dev/zero >"$1/filler" 2>/dev/null
mount_point=$1
report=$2
shift 2
"$@"
status=$?
ls -A "$mount_point/target" >"$report"
exit $status
"""


def namespace_prefix():
    """The unshare command line that gives a child its own mount namespace in which it may mount a
    tmpfs, or None where neither kind can be made here."""
    for prefix in (["unshare", "--mount"], ["unshare", "--user", "--map-root-user", "--mount"]):
        probe_dir = tempfile.mkdtemp(prefix="vkf_full_disk_probe_")
        try:
            probe = subprocess.run(prefix + ["sh", "-c", 'mount -t tmpfs -o size=64k none "$1"', "sh", probe_dir],
                                   capture_output=True, timeout=30)
            if probe.returncode == 0:
                return prefix
        except (OSError, subprocess.TimeoutExpired):
            pass
        finally:
            shutil.rmtree(probe_dir, ignore_errors=True)
    return None


class FullDisk:
    """Where a run finds a full disk: `target` is the directory it writes to. Without mount
    namespaces, the fallback is the file-size limit `fallback_limit` on the system's driver (the
    test scripts select others with VK_DRIVER_FILES or VK_ICD_FILENAMES), whose device memory is not
    file-backed."""
    prefix = None
    probed = False

    def __init__(self, root, fallback_limit):
        if not FullDisk.probed:
            FullDisk.prefix = namespace_prefix()
            FullDisk.probed = True
            print("full disk: %s" % ("a full tmpfs in a private mount namespace (%s)" % " ".join(FullDisk.prefix)
                                     if FullDisk.prefix else "no mount namespace here: RLIMIT_FSIZE on the system's driver"))
        os.mkdir(root)
        self.mount_point = root
        self.report = root + ".listing"
        self.fallback_limit = fallback_limit
        self.target = os.path.join(root, "target") if FullDisk.prefix else root

    def wrap(self, cmd, env):
        """(command line, environment, file-size limit) of a run on this full disk."""
        if FullDisk.prefix:
            return FullDisk.prefix + ["sh", "-c", FULL_DISK_SCRIPT, "sh", self.mount_point, self.report] + cmd, env, None
        env = {k: v for k, v in env.items() if k not in ("VK_DRIVER_FILES", "VK_ICD_FILENAMES", "LD_LIBRARY_PATH")}
        return cmd, env, self.fallback_limit

    def listing(self):
        """The target directory's entries after the last run."""
        if not FullDisk.prefix:
            return listing(self.target)
        try:
            with open(self.report) as f:
                return sorted(line for line in f.read().splitlines() if line)
        except OSError:
            return ["(no listing: the run did not reach its end)"]


def run(exe, args, env=None, file_limit=None, full_disk=None):
    """(exit status, stderr, peak RSS in MiB, seconds); a hang or a signal is a failure.
    file_limit: RLIMIT_FSIZE in bytes (programs that use no Vulkan). full_disk: a FullDisk the
    program runs on (its target directory is then full_disk.target)."""
    def limit_files():
        if file_limit is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, resource.RLIM_INFINITY))
    child_env = dict(os.environ, **(env or {}))
    cmd = command(exe, args)
    if full_disk is not None:
        cmd, child_env, file_limit = full_disk.wrap(cmd, child_env)
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env, preexec_fn=limit_files)
    try:
        out, err = proc.communicate(timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        fail("%s %s hung (killed after %d s)" % (os.path.basename(exe), " ".join(args), TIME_LIMIT))
        return None, "", 0, TIME_LIMIT
    seconds = time.monotonic() - start
    # The child's own peak: getrusage(RUSAGE_CHILDREN) keeps the largest of all children.
    rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if proc.returncode < 0:
        fail("%s %s was killed by signal %d: %s" % (os.path.basename(exe), " ".join(args), -proc.returncode,
                                                    err.strip()[-500:]))
    if "validation" in err.lower():
        fail("Vulkan validation spoke during %s:\n%s" % (" ".join(args), err))
    return proc.returncode, err, rss_mib, seconds


def expect(exe, args, code, text, **kwargs):
    status, err, rss, seconds = run(exe, args, **kwargs)
    if status is not None and (status != code or text not in err):
        fail("%s %s: expected exit %d naming %r, got %s: %s" % (os.path.basename(exe), " ".join(args), code, text,
                                                              status, err.strip()[-800:]))
    return status, err, rss, seconds


def make(out, *args, code=0, **kwargs):
    expect(MAKE, ["--out", out, "--seed", "3"] + list(args), code, "", **kwargs)


def listing(path):
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


def prompt_run(model, *extra):
    return ["--model", model, "--prompt-ids", "1,2,3", "--n-predict", "2", "--quiet"] + list(extra)


def main():
    tmp = tempfile.mkdtemp(prefix="vkf_hostile_cli_")
    try:
        checks(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish("hostile input: every program refused or survived it cleanly")


def checks(tmp):
    # 9: the tiny preset runs (its head size used to be 16, which vkf-run once refused); an odd
    # head size (63 / 3 = 21) is written with a warning, since vkf-run takes even sizes only.
    for family in ("bloom", "mpt"):
        model = os.path.join(tmp, "tiny-" + family)
        make(model, "--preset", "tiny", "--family", family, "--dtype", "f32")
        expect(RUN, prompt_run(model), 0, "")
    expect(MAKE, ["--out", os.path.join(tmp, "h21"), "--family", "bloom", "--layers", "1", "--hidden", "63",
                  "--heads", "3", "--vocab", "64"], 0, "vkf-run will refuse this checkpoint")
    tiny = os.path.join(tmp, "tiny-bloom")

    # 3: FIFOs where files are expected are refused at once.
    for name in ("config.json", "model.safetensors"):
        model = os.path.join(tmp, "fifo-" + name)
        shutil.copytree(tiny, model)
        os.remove(os.path.join(model, name))
        os.mkfifo(os.path.join(model, name))
        expect(RUN, prompt_run(model), 1, "is a FIFO (named pipe), not a regular file")
    fifo = os.path.join(tmp, "ids.fifo")
    os.mkfifo(fifo)
    expect(RUN, ["--model", tiny, "--prompt-ids-file", fifo, "--n-predict", "1", "--quiet"], 2, "is a FIFO")

    # 3: a pipeline cache that is a FIFO or a directory is ignored with a warning; 7: a full
    # disk while saving it is a warning and leaves no file.
    cache = os.path.join(tmp, "cache")
    expect(RUN, prompt_run(tiny), 0, "", env={"VKF_PIPELINE_CACHE_DIR": cache})
    names = listing(cache)
    if len(names) != 1:
        fail("expected one pipeline cache file, found %s" % names)
    else:
        path = os.path.join(cache, names[0])
        os.remove(path)
        os.mkfifo(path)
        expect(RUN, prompt_run(tiny), 0, "is a FIFO", env={"VKF_PIPELINE_CACHE_DIR": cache})
        os.remove(path)
        os.mkdir(path)
        expect(RUN, prompt_run(tiny), 0, "is a directory", env={"VKF_PIPELINE_CACHE_DIR": cache})
    full_cache = FullDisk(os.path.join(tmp, "full-cache"), fallback_limit=60)
    expect(RUN, prompt_run(tiny), 0, "pipeline cache not saved", env={"VKF_PIPELINE_CACHE_DIR": full_cache.target},
           full_disk=full_cache)
    if full_cache.listing():
        fail("a pipeline cache saved on a full disk left %s" % full_cache.listing())

    # 4: a shard whose directory is a symbolic link out of the checkpoint.
    outside = os.path.join(tmp, "outside")
    make(outside, "--preset", "tiny", "--family", "bloom", "--shards", "2")
    escape = os.path.join(tmp, "escape")
    os.mkdir(escape)
    shutil.copy(os.path.join(outside, "config.json"), escape)
    os.symlink(outside, os.path.join(escape, "link"))
    with open(os.path.join(outside, "model.safetensors.index.json")) as f:
        index = json.load(f)
    index["weight_map"] = {k: "link/" + v for k, v in index["weight_map"].items()}
    with open(os.path.join(escape, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f)
    expect(RUN, prompt_run(escape), 1, "outside the checkpoint directory")

    # 6: sizes that wrapped.
    # --ctx bounds every run (issue 30): a huge --n-predict ends at a full cache; a huge --ctx
    # with it is refused, counted in 64 bits.
    expect(RUN, ["--model", tiny, "--prompt-ids", "1,2", "--n-predict", "4294967295", "--ctx", "4294967295",
                 "--quiet"], 2, "sessions hold at most")
    for key, value, text in (("hidden_size", 1 << 30, "4 * 1073741824 = 4294967296"),
                             ("n_layer", 1000000, "n_layer 1000000 is over vkformer's limit")):
        model = os.path.join(tmp, "config-" + key)
        shutil.copytree(tiny, model)
        with open(os.path.join(model, "config.json")) as f:
            config = json.load(f)
        config[key] = value
        with open(os.path.join(model, "config.json"), "w") as f:
            json.dump(config, f)
        _, _, _, seconds = expect(RUN, prompt_run(model), 1, text)
        if seconds > 20:
            fail("refusing %s %d took %.1f s" % (key, value, seconds))

    # 5: a 4 KiB key over a 200k-element array used to cost a path copy per element.
    model = os.path.join(tmp, "amplified")
    shutil.copytree(tiny, model)
    with open(os.path.join(model, "config.json")) as f:
        config = json.load(f)
    config["k" * 4096] = [0] * 200000
    with open(os.path.join(model, "config.json"), "w") as f:
        json.dump(config, f, separators=(",", ":"))
    _, _, rss, _ = expect(RUN, prompt_run(model), 0, "")
    if rss > 600:
        fail("a 400 KB config.json cost %.0f MiB of RSS" % rss)

    # 8: NaN weights are named at load, not found as non-finite logits at sampling time.
    model = os.path.join(tmp, "nan")
    shutil.copytree(tiny, model)
    path = os.path.join(model, "model.safetensors")
    with open(path, "r+b") as f:
        header_size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(header_size))
        name = "h.1.mlp.dense_4h_to_h.weight"
        entry = header.get(name) or header["transformer." + name]
        f.seek(8 + header_size + entry["data_offsets"][0] + 4 * 7)
        f.write(struct.pack("<f", float("nan")))
    expect(RUN, prompt_run(model), 1, "dense_4h_to_h.weight': element 7 is NaN")

    # 8: a directory as --q, and a sparse 100 GB .npy: refused by name, before any data is read.
    qkv = {}
    for n in ("q", "k", "v"):
        qkv[n] = os.path.join(tmp, n + ".npy")
        write_npy_header(qkv[n], (1, 8, 2, 64), 1 * 8 * 2 * 64 * 4)
    expect(ATTENTION, ["--q", tmp, "--k", qkv["k"], "--v", qkv["v"]], 1, "is a directory, not a regular file")
    huge = os.path.join(tmp, "huge.npy")
    write_npy_header(huge, (1, 50331648, 8, 64), 50331648 * 8 * 64 * 4)  # 96 GiB
    _, _, rss, _ = expect(ATTENTION, ["--q", huge, "--k", qkv["k"], "--v", qkv["v"]], 1, "")
    status, err, rss, _ = run(ATTENTION, ["--q", huge, "--k", huge, "--v", huge])
    if status != 1 or "bad_alloc" in err or "maxStorageBufferRange" not in err or rss > 600:
        fail("a sparse 100 GB .npy: exit %s, %.0f MiB RSS: %s" % (status, rss, err.strip()[-500:]))

    # 7: a full disk under vkf-make-checkpoint and vkf-attention --out: an error, no file left;
    # a checkpoint larger than the free space is refused before anything is written.
    full = os.path.join(tmp, "full")
    status, err, _, _ = run(MAKE, ["--out", full, "--preset", "tiny", "--family", "mpt", "--dtype", "f32"],
                            file_limit=100000)
    if status != 1 or "write failed: File too large" not in err or listing(full):
        fail("vkf-make-checkpoint on a full disk: exit %s, left %s: %s" % (status, listing(full), err.strip()))
    huge_model = os.path.join(tmp, "35tb")
    _, _, _, seconds = expect(MAKE, ["--out", huge_model, "--family", "bloom", "--layers", "1000", "--hidden",
                                     "131072", "--heads", "1024", "--vocab", "16000000"], 1, "but the file system of")
    if seconds > 20 or os.path.exists(os.path.join(huge_model, "model.safetensors")):
        fail("a 35 TB checkpoint was not refused up front (%.1f s)" % seconds)
    for n in ("q", "k", "v"):
        with open(qkv[n], "r+b") as f:  # real values now: the data section exists, zeros
            f.truncate(os.path.getsize(qkv[n]))
    full_out = FullDisk(os.path.join(tmp, "full-out"), fallback_limit=1024)
    out = os.path.join(full_out.target, "o.npy")
    status, err, _, _ = run(ATTENTION, ["--q", qkv["q"], "--k", qkv["k"], "--v", qkv["v"], "--out", out],
                            full_disk=full_out)
    if status != 1 or "write failed" not in err or full_out.listing():
        fail("vkf-attention --out on a full disk: exit %s, left %s: %s" % (status, full_out.listing(), err.strip()))


def write_npy_header(path, shape, data_bytes):
    """A float32 .npy file of `shape` whose data section is `data_bytes` of zeros (sparse)."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % ", ".join(str(d) for d in shape)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.truncate(10 + len(header) + data_bytes)


if __name__ == "__main__":
    sys.exit(main())
