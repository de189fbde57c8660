#!/usr/bin/env python3
"""vkf-server split by layers over MPI ranks (issue 31, docs/SERVER.md "Under mpirun"), on
lavapipe with models/kjv-bloom:

- 4 concurrent temperature-0 completions to `mpirun -n 2 vkf-server` (--split auto, rank 1's
  budget cut to 10 MiB by VKF_LIMITS: layers 0..2 | 3..3) return exactly the text a
  one-process vkf-server gives them, and /metrics shows the pipeline overlapped (steps
  started while another was in flight, at most 2 in flight);
- both stop cleanly on SIGTERM (mpirun passes it on);
- a rank that stalls (SIGSTOP) while a request runs (--split 1,3: rank 0 logs those layers),
  under mpirun --mca orte_abort_on_non_zero_status 0: the request gets an error rather than
  hanging, and rank 0 exits non-zero naming the rank within 60 s, ending the job;
- a rank killed (SIGKILL) while a streamed and a non-streamed request run, under that option
  and under mpirun's defaults: the stream ends with an error event naming the rank and
  [DONE], the other request gets a 500 naming it, /health answers 503 naming it (under the
  defaults rank 0 may have stopped listening already), and rank 0 exits non-zero naming it
  within 60 s;
- refused on every rank before loading: a model over the ranks' budgets (naming what it
  needs and what they have), and --split counts that are not one per rank.

usage: dist_server_test.py PATH/TO/vkf-server MODELS/kjv-bloom [--full]
--full: also 3 ranks (--split 1,2,1).
(VKF_MPIRUN: mpirun's path; the ranks inherit the environment.)
"""

import http.client
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_checks import fail, finish  # noqa: E402
from server_process import ServerProcess  # noqa: E402

SERVER, KJV = sys.argv[1:3]
FULL = "--full" in sys.argv[3:]
MPIRUN = os.environ.get("VKF_MPIRUN", "mpirun")
PROMPTS = ["In the beginning God", "And the LORD said unto Moses", "Blessed are", "For God so loved"]
# Some 40 tokens: two whole KV blocks of 16 for the prefix cache.
LONG_PROMPT = "In the beginning God created the heaven and the earth. And the earth was without form, and void; and " \
              "darkness was upon the face of the deep."
# mpirun's option that leaves rank 0 running when another rank dies (docs/DISTRIBUTED.md).
KEEP_RANK_ZERO = ["--mca", "orte_abort_on_non_zero_status", "0"]
ARGS = ["--model", KJV, "--port", "0", "--parallel", "4", "--ctx", "64", "--chunk", "16"]


class Server(ServerProcess):
    """vkf-server (under mpirun with `ranks`) on a free port."""

    def __init__(self, ranks, extra=(), env_extra=None, last_limits=None, mpirun_options=()):
        """last_limits: VKF_LIMITS of the last rank only (mpirun's MPMD form): a smaller budget."""
        args = [SERVER] + ARGS + list(extra)
        mpirun = [MPIRUN, "--oversubscribe"] + list(mpirun_options)
        if last_limits:
            cmd = mpirun + ["-n", str(ranks - 1)] + args + [":", "-n", "1", "-x", "VKF_LIMITS=" + last_limits] + args
        else:
            cmd = (mpirun + ["-n", str(ranks)] if ranks > 1 else []) + args
        self.ranks = ranks
        super().__init__(cmd, env_extra, what="vkf-server (%d ranks)" % ranks)

    def complete(self, prompt, max_tokens=12, stream=False):
        body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
        if stream:
            body["stream"] = True
        try:
            status, _, text = self.request("POST", "/v1/completions", body, timeout=120)
        except (OSError, http.client.HTTPException) as e:  # no answer at all (a timeout too)
            return 0, repr(e)
        return status, json.loads(text) if text.startswith("{") and not stream else text

    def stop(self, what):
        # mpirun itself exits 1 after passing on a SIGTERM, however its ranks exit: the ranks'
        # own word is their stderr (an error names its rank).
        self.what = what
        super().stop(exit_ok=lambda code: code == 0 or (self.ranks > 1 and "error" not in "".join(self.stderr)))


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


def cache_hit(server):
    """A prompt again with one word more (the prefix cache's hit), then under another
    cache_salt (a miss): (the texts, the cached_tokens of each)."""
    texts, cached = [], []
    for prompt, salt in ((LONG_PROMPT, None), (LONG_PROMPT + " And", None), (LONG_PROMPT + " And", "other")):
        body = {"prompt": prompt, "max_tokens": 8, "temperature": 0}
        if salt:
            body["cache_salt"] = salt
        status, reply = server.post("/v1/completions", body, timeout=120)
        if status != 200:
            fail("cache hit, %r: status %d: %r" % (prompt, status, reply))
            return None
        texts.append(reply["choices"][0]["text"])
        cached.append(reply["usage"]["prompt_tokens_details"]["cached_tokens"])
    return texts[1:], cached[1:]


def plan_line(server):
    """Rank 0's "layers over R ranks" line (printed before it listens), or None."""
    for line in server.stderr:
        if line.startswith("vkf-server: layers over "):
            return line.strip()
    return None


def check_layers(server, what, layers):
    deadline = time.monotonic() + 5  # stderr is read on a thread: the line may come just after
    while plan_line(server) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    line = plan_line(server)
    if line is None or not line.endswith(": " + layers):
        fail("%s: rank 0 should log layers %s: %r" % (what, layers, line))


def check_ranks(ranks, expected, split, layers, last_limits=None, hit=None):
    """`ranks` ranks (--split `split`) answer as one process, over `layers` (rank 0's log),
    and their prefix caches hit and miss as its (`hit`: cache_hit's on one process)."""
    start = time.monotonic()
    server = Server(ranks, ["--split", split], last_limits=last_limits)
    texts = concurrent(server)
    metrics = server.metrics()
    if hit is not None and cache_hit(server) != hit:
        fail("mpirun -n %d: prefix cache %r; one process: %r" % (ranks, cache_hit(server), hit))
    what = "mpirun -n %d vkf-server --split %s%s" % (ranks, split, ", last " + last_limits if last_limits else "")
    check_layers(server, what, layers)
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


def check_stalled_rank():
    """Rank 1 stops itself (SIGSTOP) before its 6th step, while a request runs: rank 0 answers
    an error, not a hang, and exits naming it. Under --mca orte_abort_on_non_zero_status 0,
    where rank 0's exit does not make mpirun end the stopped rank: rank 0 ends the job."""
    what = "mpirun --mca orte_abort_on_non_zero_status 0 -n 2 vkf-server with rank 1 stalled"
    server = Server(2, ["--rank-timeout", "3", "--split", "1,3"], {"VKF_TEST_RANK_FAULT": "1:5:stop"},
                    mpirun_options=KEEP_RANK_ZERO)
    check_layers(server, what, "0..0 | 1..3")
    status, body = server.complete(PROMPTS[0], max_tokens=20)
    if status == 200:
        fail("%s: the request succeeded: %r" % (what, body))
    try:
        code = server.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        fail("%s: still running 60 s after the fault" % what)
        return
    seconds = time.monotonic() - server.started
    out = "".join(server.stderr)
    print("%s: request answered %d, exit %d after %.1f s" % (what, status, code, seconds))
    if code == 0 or "rank 1" not in out:
        fail("%s: exit %d, output does not name rank 1:\n%s" % (what, code, out))


def check_killed_rank(mpirun_options, what):
    """Rank 1 dies (SIGKILL, as kill -9) before its 6th step while a streamed and a
    non-streamed request run: the stream ends with an error event naming rank 1, then [DONE];
    the other request gets a 500 naming it; /health says so; rank 0 exits non-zero naming it.
    With `--mca orte_abort_on_non_zero_status 0` mpirun leaves rank 0 running, which notices
    the silence (--rank-timeout 3); without it, mpirun ends the job (SIGTERM, then SIGKILL a
    second later) and rank 0 answers on mpirun's SIGTERM, naming the rank silent since, and
    stops listening at once."""
    server = Server(2, ["--rank-timeout", "3", "--split", "1,3"], {"VKF_TEST_RANK_FAULT": "1:5:kill"},
                    mpirun_options=mpirun_options)
    check_layers(server, what, "0..0 | 1..3")
    answers = {}

    def one(stream):
        answers[stream] = server.complete(PROMPTS[1 if stream else 0], max_tokens=40, stream=stream)

    threads = [threading.Thread(target=one, args=(stream,)) for stream in (True, False)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    try:
        status, _, text = server.request("GET", "/health", timeout=10)
        health = (status, text)
    except (OSError, http.client.HTTPException) as e:
        health = (0, repr(e))
    try:
        code = server.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        fail("%s: still running 60 s after the fault" % what)
        return
    seconds = time.monotonic() - server.started
    out = "".join(server.stderr)
    print("%s: stream %r, request %d, /health %d, exit %d after %.1f s" %
          (what, answers.get(True, (None, ""))[1][-120:], answers.get(False, (0,))[0], health[0], code, seconds))
    status, text = answers.get(True, (0, "no answer"))
    events = [x[len("data: "):] for x in text.split("\n\n") if x.startswith("data: ")]
    error = None
    if len(events) >= 2 and events[-2].startswith("{"):
        error = json.loads(events[-2]).get("error")
    if status != 200 or events[-1:] != ["[DONE]"] or not error or "rank 1 failed" not in error.get("message", ""):
        fail("%s: the stream should end with an error event naming rank 1, then [DONE]: %d %r" % (what, status, text))
    status, body = answers.get(False, (0, "no answer"))
    if status != 500 or not isinstance(body, dict) or "rank 1 failed" not in body.get("error", {}).get("message", ""):
        fail("%s: the request should get a 500 naming rank 1: %d %r" % (what, status, body))
    # Rank 0 answers on for a second after noticing a failure; on mpirun's SIGTERM it stops at
    # once (its SIGKILL comes a second later): then nothing listens any more.
    gone = not mpirun_options and health[0] == 0 and "ConnectionRefused" in health[1]
    if not gone and (health[0] != 503 or "rank 1 failed" not in health[1]):
        fail("%s: /health should answer 503 naming rank 1: %r" % (what, health))
    if code == 0 or "vkf-server: error: rank 0 of 2: rank 1 failed" not in out:
        fail("%s: exit %d, rank 0 should exit naming rank 1:\n%s" % (what, code, out))


def expect_refusal(what, args, limits, needles):
    """Every rank refuses with every one of `needles` in its error, non-zero, before loading."""
    cmd = [MPIRUN, "--oversubscribe", "-n", "2"] + (["-x", "VKF_LIMITS=" + limits] if limits else []) + [
        SERVER] + ARGS + args
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        fail("%s: still running after 30 s" % what)
        return
    print("%s: exit %d after %.1f s" % (what, proc.returncode, time.monotonic() - start))
    for r in range(2):
        lines = [x for x in proc.stderr.splitlines() if x.startswith("vkf-server: error: rank %d of 2:" % r)]
        if proc.returncode == 0 or not lines or any(n not in lines[0] for n in needles):
            fail("%s: rank %d should refuse naming %s: %s" % (what, r, needles, proc.stderr))


def main():
    one = Server(1)
    expected = concurrent(one)
    hit = cache_hit(one)
    one.stop("vkf-server")
    print("one process: %r, prefix cache: %r" % (expected, hit))
    if hit is None or hit[1][0] < 32 or hit[1][1] != 0:
        fail("one process: the prefix cache did not hit, or hit across salts: %r" % (hit,))
    # --split auto by each rank's budget for its weights and its share of the server's KV
    # blocks: both ranks share lavapipe, so rank 1 plans with half its 10 MiB, which holds its
    # fixed part (head and logits) and one layer.
    check_ranks(2, expected, "auto", "0..2 | 3..3", "device_heap=10M,host_heap=1K", hit)
    if FULL:
        check_ranks(3, expected, "1,2,1", "0..0 | 1..2 | 3..3", hit=hit)
    expect_refusal("over the ranks' budgets", [], "device_heap=6M,host_heap=1K",
                   ["split auto: the model needs ", "but they have ", "rank 0 3.00 MiB, rank 1 3.00 MiB",
                    "rank 1: llvmpipe"])
    expect_refusal("--split 1,1,2 over 2 ranks", ["--split", "1,1,2"], None,
                   ["--split 1,1,2 gives 3 layer counts for 2 MPI ranks"])
    check_stalled_rank()
    check_killed_rank(KEEP_RANK_ZERO, "mpirun --mca orte_abort_on_non_zero_status 0 -n 2 vkf-server with rank 1 killed")
    check_killed_rank([], "mpirun -n 2 vkf-server with rank 1 killed")
    return finish("vkf-server over MPI ranks: all checks passed")


if __name__ == "__main__":
    sys.exit(main())
