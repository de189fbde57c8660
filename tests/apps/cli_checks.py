"""What the program checks in tests/apps share: failures collected (the run goes on after
one, so a single run reports them all), programs run with any Vulkan validation message
counted as a failure, and the exit status."""

import subprocess

failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message)


def run(exe, args, timeout=900):
    proc = subprocess.run([exe] + args, capture_output=True, text=True, timeout=timeout)
    if "validation" in proc.stderr.lower():
        fail("Vulkan validation spoke during %s:\n%s" % (" ".join(args), proc.stderr))
    return proc


def finish(success_message):
    """The exit status: 1 after any failure (counted), else 0 (and the message)."""
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print(success_message)
    return 0
