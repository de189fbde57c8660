#!/usr/bin/env python3
"""A bounded load test of a running vkf-server on loopback (not run in CI).

For each concurrency level (default 1, 4, 16) it starts that many streaming completion clients
at once, each asking for --tokens tokens (ignore_eos, temperature 0), and reports p50/p99 time
to first token, p50/p99 per-token latency (the gaps between streamed chunks) and the aggregate
tokens/s (all tokens over the wall time of the level). --burst N then sends N requests at once
and counts the answers: with --parallel P and --queue Q on the server, everything past P + Q
must be a 503 with Retry-After, everything else complete; --kill K of them are dropped
mid-stream, after which /metrics must come back to 0 active sequences and 0 KV blocks used.
--rounds R repeats the whole run and prints the server's resident memory (--pid) after each.

usage: scripts/server_load.py --url http://127.0.0.1:8080 [--levels 1,4,16] [--tokens 64]
       [--burst 200] [--kill 20] [--rounds 3] [--pid PID] [--api-key KEY]
"""

import argparse
import http.client
import json
import socket
import statistics
import sys
import threading
import time
import urllib.parse


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


class Client:
    def __init__(self, args):
        url = urllib.parse.urlparse(args.url)
        self.host, self.port = url.hostname, url.port or 80
        self.headers = {"Content-Type": "application/json"}
        if args.api_key:
            self.headers["Authorization"] = "Bearer " + args.api_key
        self.tokens = args.tokens
        self.prompt = args.prompt

    def stream(self, result, kill_after=None):
        """One streamed completion; fills result with ttft, gaps, tokens, status."""
        start = time.perf_counter()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
        body = {"prompt": self.prompt, "max_tokens": self.tokens, "temperature": 0, "stream": True,
                "ignore_eos": True}
        conn.request("POST", "/v1/completions", body=json.dumps(body), headers=self.headers)
        resp = conn.getresponse()
        result["status"] = resp.status
        result["retry_after"] = resp.getheader("Retry-After")
        if resp.status != 200:
            resp.read()
            conn.close()
            return
        last = None
        gaps, tokens, done, buffer = [], 0, False, b""
        while True:
            line = resp.readline()
            if not line:
                break
            if not line.startswith(b"data: "):
                continue
            payload = line[len(b"data: "):].strip()
            if payload == b"[DONE]":
                done = True
                break
            chunk = json.loads(payload)
            if chunk.get("choices") and chunk["choices"][0].get("finish_reason") is None:
                now = time.perf_counter()
                if last is None:
                    result["ttft"] = now - start
                else:
                    gaps.append(now - last)
                last = now
                tokens += 1
                if kill_after is not None and tokens >= kill_after:
                    conn.sock.shutdown(socket.SHUT_RDWR)
                    conn.close()
                    result["killed"] = True
                    return
        del buffer
        conn.close()
        result.update(gaps=gaps, tokens=tokens, done=done)

    def metrics(self):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        conn.request("GET", "/metrics", headers=self.headers)
        text = conn.getresponse().read().decode()
        conn.close()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out


def run_at_once(count, target):
    results = [{} for _ in range(count)]
    threads = [threading.Thread(target=target, args=(results[i], i)) for i in range(count)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, time.perf_counter() - start


def level(client, streams):
    results, wall = run_at_once(streams, lambda r, i: client.stream(r))
    ok = [r for r in results if r.get("status") == 200 and r.get("done")]
    ttft = [r["ttft"] for r in ok if "ttft" in r]
    gaps = [g for r in ok for g in r["gaps"]]
    tokens = sum(r["tokens"] for r in ok)
    print("%3d streams: TTFT p50 %7.1f ms p99 %7.1f ms | per token p50 %6.1f ms p99 %6.1f ms | %8.1f tokens/s "
          "aggregate (%d/%d complete)" % (streams, 1e3 * percentile(ttft, 50), 1e3 * percentile(ttft, 99),
                                          1e3 * percentile(gaps, 50), 1e3 * percentile(gaps, 99), tokens / wall,
                                          len(ok), streams))
    return tokens / wall, len(ok) == streams and all(r["tokens"] == client.tokens for r in ok)


def burst(client, count, kill):
    results, _ = run_at_once(count, lambda r, i: client.stream(r, kill_after=2 if i < kill else None))
    statuses = {}
    for r in results:
        statuses[r.get("status")] = statuses.get(r.get("status"), 0) + 1
    complete = sum(1 for r in results if r.get("status") == 200 and (r.get("killed") or
                                                                     (r.get("done") and r["tokens"] == client.tokens)))
    bad = [r for r in results if r.get("status") not in (200, 503) or (r.get("status") == 503 and not
                                                                       r.get("retry_after"))]
    print("burst of %d (%d killed mid-stream): statuses %s, %d complete or killed, %d bad" %
          (count, kill, statuses, complete, len(bad)))
    deadline = time.time() + 60
    while time.time() < deadline:
        m = client.metrics()
        if m["vkf_active_sequences"] == 0 and m["vkf_kv_blocks_used"] == 0 and m["vkf_queued_requests"] == 0:
            break
        time.sleep(0.2)
    print("after the burst: %d active, %d queued, %d KV blocks used" % (m["vkf_active_sequences"],
                                                                       m["vkf_queued_requests"],
                                                                       m["vkf_kv_blocks_used"]))
    return not bad and complete == statuses.get(200, 0) and m["vkf_active_sequences"] == 0


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--levels", default="1,4,16")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--prompt", default="In the beginning God created")
    parser.add_argument("--burst", type=int, default=0)
    parser.add_argument("--kill", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--pid", type=int)
    parser.add_argument("--api-key")
    args = parser.parse_args()
    client = Client(args)
    ok = True
    for round_ in range(args.rounds):
        rates = {}
        for streams in [int(x) for x in args.levels.split(",")]:
            rates[streams], complete = level(client, streams)
            ok &= complete
        if 1 in rates and 16 in rates:
            print("16 streams / 1 stream aggregate: %.2fx" % (rates[16] / rates[1]))
        if args.burst:
            ok &= burst(client, args.burst, args.kill)
        if args.pid:
            print("round %d: server RSS %d KiB" % (round_ + 1, rss_kib(args.pid)))
    print("load test: %s" % ("OK" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
