"""What the program checks in tests/apps share: failures collected (the run goes on after
one, so a single run reports them all), programs run with any Vulkan validation message
counted as a failure, and the exit status."""

import json
import os
import shlex
import subprocess

failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message)


def command(exe, args=()):
    """The command line that runs `exe args`: in a cross-build, after the emulator that runs its
    programs (VKF_TEST_EMULATOR, set by tests/CMakeLists.txt, e.g. qemu-aarch64-static), since
    binfmt_misc may not be there to start them by path."""
    return shlex.split(os.environ.get("VKF_TEST_EMULATOR", "")) + [exe] + list(args)


def run(exe, args, timeout=900):
    proc = subprocess.run(command(exe, args), capture_output=True, text=True, timeout=timeout)
    if "validation" in proc.stderr.lower():
        fail("Vulkan validation spoke during %s:\n%s" % (" ".join(args), proc.stderr))
    return proc


def run_json(exe, args):
    """The JSON object `exe --json --quiet args` prints; None (and a failure) if it fails."""
    proc = run(exe, ["--json", "--quiet"] + args)
    if proc.returncode != 0:
        fail("%s %s exited %d: %s" % (os.path.basename(exe), " ".join(args), proc.returncode, proc.stderr))
        return None
    return json.loads(proc.stdout)


def expect_refused(exe, args, code, text):
    """`exe args` must exit with `code`, naming `text` on stderr."""
    proc = run(exe, args)
    if proc.returncode != code or text not in proc.stderr:
        fail("%s %s: expected exit %d naming %r, got %d: %s" % (os.path.basename(exe), " ".join(args), code, text,
                                                               proc.returncode, proc.stderr.strip()))


def finish(success_message):
    """The exit status: 1 after any failure (counted), else 0 (and the message)."""
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print(success_message)
    return 0
