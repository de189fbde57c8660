#!/usr/bin/env python3
"""vkf-server split by layers over MPI ranks (issue 31, docs/SERVER.md "Under mpirun"), on
lavapipe with models/kjv-bloom:

- 4 concurrent temperature-0 completions to `mpirun -n 2 vkf-server` return exactly the text
  a one-process vkf-server gives them, and /metrics shows the pipeline overlapped (steps
  started while another was in flight, at most 2 in flight);
- both stop cleanly on SIGTERM (mpirun passes it on);
- a rank that stalls (SIGSTOP; --full: one killed) while a request runs: the request gets an error rather than
  hanging, and rank 0 exits non-zero naming the rank within 60 s.

usage: dist_server_test.py PATH/TO/vkf-server MODELS/kjv-bloom [--full]
--full: also 3 ranks, and a killed rank.
(VKF_MPIRUN: mpirun's path; the ranks inherit the environment.)
"""

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps"))
from cli_checks import fail, finish  # noqa: E402

SERVER, KJV = sys.argv[1:3]
FULL = "--full" in sys.argv[3:]
MPIRUN = os.environ.get("VKF_MPIRUN", "mpirun")
PROMPTS = ["In the beginning God", "And the LORD said unto Moses", "Blessed are", "For God so loved"]
ARGS = ["--model", KJV, "--port", "0", "--parallel", "4", "--ctx", "64", "--chunk", "16", "--quiet"]


class Server:
    """vkf-server (under mpirun with `ranks`) on a free port; its stderr collected."""

    def __init__(self, ranks, extra=(), env_extra=None):
        cmd = ([MPIRUN, "--oversubscribe", "-n", str(ranks)] if ranks > 1 else []) + [SERVER] + ARGS + list(extra)
        env = dict(os.environ, **(env_extra or {}))
        self.ranks = ranks
        self.start = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.stderr = []
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()
        line = self.proc.stdout.readline()
        if "listening on http://" not in line:
            self.proc.wait(timeout=60)
            raise SystemExit("vkf-server (%d ranks) did not start: %r %s" % (ranks, line, "".join(self.stderr)))
        self.port = int(line.rsplit(":", 1)[1])

    def request(self, method, path, body=None, timeout=120):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        conn.request(method, path, body=None if body is None else json.dumps(body),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        text = resp.read().decode("utf-8")
        conn.close()
        return resp.status, text

    def complete(self, prompt, max_tokens=12):
        status, text = self.request("POST", "/v1/completions",
                                    {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0})
        return status, json.loads(text) if text.startswith("{") else text

    def metrics(self):
        values = {}
        for line in self.request("GET", "/metrics")[1].splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def stop(self, what):
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail("%s did not stop on SIGTERM" % what)
            return
        # mpirun itself exits 1 after passing on a SIGTERM, however its ranks exit: the ranks'
        # own word is their stderr (an error names its rank).
        if code != 0 and (self.ranks == 1 or "error" in "".join(self.stderr)):
            fail("%s exited %d on SIGTERM: %s" % (what, code, "".join(self.stderr)))
        if "validation" in "".join(self.stderr).lower():
            fail("Vulkan validation spoke in %s:\n%s" % (what, "".join(self.stderr)))


def concurrent(server):
    """The texts of PROMPTS, sent at once."""
    results = [None] * len(PROMPTS)

    def one(i):
        results[i] = server.complete(PROMPTS[i])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(PROMPTS))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    texts = []
    for prompt, (status, body) in zip(PROMPTS, results):
        if status != 200:
            fail("%r: status %d: %r" % (prompt, status, body))
            texts.append(None)
        else:
            texts.append(body["choices"][0]["text"])
    return texts


def check_ranks(ranks, expected):
    start = time.monotonic()
    server = Server(ranks)
    texts = concurrent(server)
    metrics = server.metrics()
    what = "mpirun -n %d vkf-server" % ranks
    for prompt, text, want in zip(PROMPTS, texts, expected):
        if text != want:
            fail("%s: %r -> %r; one process: %r" % (what, prompt, text, want))
    steps = metrics.get("vkf_pipeline_steps_total", 0)
    overlapped = metrics.get("vkf_pipeline_overlapped_steps_total", 0)
    in_flight = metrics.get("vkf_pipeline_max_in_flight", 0)
    print("%s: %d requests as one process; pipeline: %d steps, %d overlapped, at most %d in flight" %
          (what, len(PROMPTS), steps, overlapped, in_flight))
    if not (overlapped > 0 and in_flight >= 2 and in_flight <= ranks):
        fail("%s: the pipeline did not overlap: %s" % (what, metrics))
    server.stop(what)
    print("%s: %.1f s" % (what, time.monotonic() - start))


def check_failed_rank(action):
    """Rank 1 stops itself (SIGSTOP) or dies (SIGKILL, as kill -9) before its 6th step, while a
    request runs."""
    what = "mpirun -n 2 vkf-server with rank 1 %s" % ("stalled" if action == "stop" else "killed")
    server = Server(2, ["--rank-timeout", "3"], {"VKF_TEST_RANK_FAULT": "1:5:" + action})
    # A stalled rank: rank 0 answers 500 naming it. A killed one: mpirun ends the job at once,
    # and the connection closes without an answer (an error too, not a hang).
    try:
        status, body = server.complete(PROMPTS[0], max_tokens=20)
    except (ConnectionError, http.client.HTTPException) as e:
        status, body = 0, repr(e)
    if status == 200:
        fail("%s: the request succeeded: %r" % (what, body))
    try:
        code = server.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        fail("%s: still running 60 s after the fault" % what)
        return
    seconds = time.monotonic() - server.start
    out = "".join(server.stderr)
    print("%s: request answered %d, exit %d after %.1f s" % (what, status, code, seconds))
    if code == 0 or "rank 1" not in out:
        fail("%s: exit %d, output does not name rank 1:\n%s" % (what, code, out))


def main():
    one = Server(1)
    expected = concurrent(one)
    one.stop("vkf-server")
    print("one process: %r" % expected)
    check_ranks(2, expected)
    if FULL:
        check_ranks(3, expected)
    check_failed_rank("stop")
    if FULL:
        check_failed_rank("kill")
    return finish("vkf-server over MPI ranks: all checks passed")


if __name__ == "__main__":
    sys.exit(main())
