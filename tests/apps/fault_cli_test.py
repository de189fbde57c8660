#!/usr/bin/env python3
"""Device faults seen from the programs: vkf-run with VKF_TIMEOUT_MS=1, where every forward
pass outlives its timeout, must print the timeout error and exit with status 1, never die
of a signal (it crashed in the driver when the unwinding freed memory the timed-out work
still used) and never make the validation layer speak; a bad VKF_TIMEOUT_MS and a --timeout
past the maximum are refused by name.

usage: fault_cli_test.py PATH/TO/vkf-run PATH/TO/vkf-make-checkpoint PATH/TO/vkf-bench
"""

import os
import subprocess
import sys
import tempfile

from cli_checks import command, fail, finish

RUN, MAKE, BENCH = sys.argv[1], sys.argv[2], sys.argv[3]


def run(exe, args, env_extra=None):
    env = dict(os.environ)
    env.update(env_extra or {})
    proc = subprocess.run(command(exe, args), capture_output=True, text=True, timeout=600, env=env)
    if "validation" in proc.stderr.lower():
        fail("Vulkan validation spoke during %s %s:\n%s" % (os.path.basename(exe), " ".join(args), proc.stderr))
    return proc


def expect_exit(proc, what, code, needle):
    if proc.returncode < 0:
        fail("%s: killed by signal %d; stderr %r" % (what, -proc.returncode, proc.stderr[-2000:]))
    elif proc.returncode != code or needle not in proc.stderr:
        fail("%s: exit %d (expected %d), stderr %r should name %r" % (what, proc.returncode, code,
                                                                     proc.stderr[-2000:], needle))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "bloom")
        made = run(MAKE, ["--out", model, "--family", "bloom", "--layers", "2", "--hidden", "256", "--heads", "8",
                          "--vocab", "301", "--seed", "3"])
        if made.returncode != 0:
            raise SystemExit("vkf-make-checkpoint failed: " + made.stderr)
        prompt = ["--prompt-ids", ",".join(str(i % 301) for i in range(1, 65)), "--n-predict", "4", "--quiet"]

        # The run works with the default timeout...
        ok = run(RUN, ["--model", model] + prompt)
        expect_exit(ok, "vkf-run", 0, "")

        # ...and with 1 ms, the forward pass times out: the error, status 1, no signal. Several
        # times, since the crash depended on how far the driver had got.
        for attempt in range(3):
            proc = run(RUN, ["--model", model] + prompt, {"VKF_TIMEOUT_MS": "1"})
            if proc.returncode == 0:
                print("note: the work finished within 1 ms on this device; the timeout path was not taken")
                continue
            expect_exit(proc, "VKF_TIMEOUT_MS=1 vkf-run (attempt %d)" % attempt, 1, "did not finish within 1 ms")
            if "vkf-run: error:" not in proc.stderr:
                fail("VKF_TIMEOUT_MS=1: the error is not reported as vkf-run's: %r" % proc.stderr[-2000:])

        # A timeout that is not a whole number of milliseconds, or too long to convert to
        # nanoseconds, is refused by name before any work.
        for value, needle in [("1e9", "VKF_TIMEOUT_MS='1e9' is not a whole number of milliseconds"),
                              ("10abc", "VKF_TIMEOUT_MS='10abc' is not a whole number of milliseconds"),
                              ("-5", "VKF_TIMEOUT_MS='-5' is not a whole number"),
                              ("0", "VKF_TIMEOUT_MS='0' is out of range"),
                              ("18446744073710", "VKF_TIMEOUT_MS='18446744073710' is out of range")]:
            proc = run(RUN, ["--model", model] + prompt, {"VKF_TIMEOUT_MS": value})
            expect_exit(proc, "VKF_TIMEOUT_MS=%s vkf-run" % value, 1, needle)

        # vkf-bench's --timeout (seconds) holds to the same maximum: a usage error.
        for value in ["4294967295", "1000001", "0", "5s"]:
            proc = run(BENCH, ["attention", "--quick", "--timeout", value])
            expect_exit(proc, "vkf-bench attention --timeout %s" % value, 2, "--timeout")
    return finish("vkf-run exits cleanly on device timeouts")


if __name__ == "__main__":
    sys.exit(main())
