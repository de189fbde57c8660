#!/usr/bin/env python3
"""host/dist's channel and handshake under mpirun, without a GPU (dist_probe): typed messages
round a ring of 2 and 3 ranks; a rank with another fingerprint is named by the handshake on
every rank; a rank that stops (SIGSTOP), dies (SIGKILL) or throws ends every rank with a
non-zero status, within a bounded time, the output naming that rank.

usage: dist_test.py PATH/TO/dist_probe   (VKF_MPIRUN: mpirun's path)
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps"))
from cli_checks import fail, finish  # noqa: E402

PROBE = sys.argv[1]
MPIRUN = os.environ.get("VKF_MPIRUN", "mpirun")


def mpirun(ranks, args, timeout=60):
    cmd = [MPIRUN, "--oversubscribe", "-n", str(ranks), PROBE] + args
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        fail("%s: still running after %d s: %r" % (" ".join(cmd), timeout, e.stderr))
        return None, timeout
    return proc, time.monotonic() - start


def expect_failure(ranks, fault, failed, survivors, needles, limit):
    """mpirun with --fault: non-zero, within `limit` s, every survivor naming `failed`."""
    proc, seconds = mpirun(ranks, ["--rank-timeout", "2", "--fault", fault])
    if proc is None:
        return
    what = "fault %s on %d ranks" % (fault, ranks)
    print("%s: exit %d after %.1f s" % (what, proc.returncode, seconds))
    out = proc.stdout + proc.stderr
    if proc.returncode == 0:
        fail("%s: mpirun exited 0: %s" % (what, out))
    if seconds > limit:
        fail("%s: took %.1f s (limit %d)" % (what, seconds, limit))
    for r in survivors:
        line = [x for x in out.splitlines() if x.startswith("dist_probe: rank %d of %d:" % (r, ranks))]
        if not line or not any(n in line[0] for n in needles):
            fail("%s: rank %d does not name rank %d (%r): %s" % (what, r, failed, needles, out))


def main():
    for ranks in (2, 3):
        proc, seconds = mpirun(ranks, ["--rounds", "40"])
        if proc is not None and (proc.returncode != 0 or "dist_probe: ok" not in proc.stdout):
            fail("%d ranks: exit %d: %s%s" % (ranks, proc.returncode, proc.stdout, proc.stderr))
        elif proc is not None:
            print("%d ranks: ok in %.1f s" % (ranks, seconds))

    # Another split on rank 1: every rank names it, before the ring starts.
    expect_failure(3, "1:0:split", 1, (0, 1, 2), ["ranks 0, 2 have 'auto'; rank 1 has '1,2'"], 30)
    # Rank 2 stops: ranks 0 and 1 notice its silence (2 s) and say so.
    expect_failure(3, "2:5:stop", 2, (0, 1), ["rank 2 failed: nothing heard from it"], 30)
    # Rank 1 throws: the others hear it from rank 1 itself.
    expect_failure(3, "1:3:error", 1, (0, 2), ["rank 1 failed: the probe's own error"], 30)
    # Rank 1 dies: mpirun names it; the others end (by its SIGTERM or by their timeout).
    proc, seconds = mpirun(3, ["--rank-timeout", "2", "--fault", "1:5:kill"])
    if proc is not None:
        out = proc.stdout + proc.stderr
        print("fault 1:5:kill: exit %d after %.1f s" % (proc.returncode, seconds))
        if proc.returncode == 0 or seconds > 30 or "rank 1" not in out:
            fail("a killed rank 1: exit %d after %.1f s, output should name rank 1: %s" %
                 (proc.returncode, seconds, out))
    return finish("dist_probe: the channel and the handshake behave under mpirun")


if __name__ == "__main__":
    sys.exit(main())
