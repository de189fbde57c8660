"""Checks of vkf-server that server_test.py runs: OpenAI error objects, and the transport's guard
(apps/server/guarded_server.hpp) through raw HTTP exchanges: body limits on chunked and gzip
bodies (with the server's peak RSS), pipelining, slow clients against /health, and the bound
on connections sending requests."""

import gzip
import json
import re
import select
import socket
import threading
import time

from cli_checks import fail

PROMPT = "In the beginning God"
LONG_PROMPT = "And the LORD said unto Moses"


def expect_error(what, status, body, want_status, param=None, mentions=None):
    """An OpenAI error object with this status, param and words in its message."""
    if status != want_status or not isinstance(body, dict) or set(body.get("error", {})) != {
            "message", "type", "param", "code"}:
        fail("%s: expected a %d error object, got %s %r" % (what, want_status, status, body))
        return
    if param is not None and body["error"]["param"] != param:
        fail("%s: param %r, expected %r" % (what, body["error"]["param"], param))
    if mentions is not None and mentions not in body["error"]["message"]:
        fail("%s: message %r does not name %r" % (what, body["error"]["message"], mentions))


def proc_kb(pid, field):
    with open("/proc/%d/status" % pid, encoding="utf-8") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def reset_peak_rss(pid):
    """Starts VmHWM (the peak RSS) over from the current RSS (Linux's clear_refs, value 5)."""
    with open("/proc/%d/clear_refs" % pid, "w", encoding="utf-8") as f:
        f.write("5")


def raw_request(port, head, body_parts=(), timeout=30):
    """Sends `head` and then `body_parts` (from another thread, so that a refusal is read while
    the body still goes out), and reads one response: (status, headers, body bytes), status 0
    when the connection ended without one."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)

    def send():
        try:
            sock.sendall(head)
            for part in body_parts:
                sock.sendall(part)
        except OSError:
            pass  # the server closed the connection: it refused the body

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            part = sock.recv(65536)
            if not part:
                break
            data += part
        head_bytes, _, rest = data.partition(b"\r\n\r\n")
        lines = head_bytes.decode("latin-1").split("\r\n")
        if not lines[0].startswith("HTTP/1.1 "):
            return 0, {}, data
        headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
        length = int(headers.get("Content-Length", "-1"))  # none: the body ends at the close
        while length < 0 or len(rest) < length:
            part = sock.recv(65536)
            if not part:
                break
            rest += part
        return int(lines[0].split()[1]), headers, rest
    except OSError as e:
        return 0, {}, str(e).encode()
    finally:
        sock.close()
        sender.join(timeout=timeout)


def check_body_limits(server, limit):
    """Chunked and gzip bodies over --max-body (`limit` bytes): 413 at the limit, no more read."""
    pid = server.proc.pid
    total = 40 << 20
    piece = b"x" * 65536
    chunks = (b"%x\r\n%s\r\n" % (len(piece), piece) for _ in range(total // len(piece)))
    reset_peak_rss(pid)
    before = proc_kb(pid, "VmRSS")
    start = time.time()
    status, _, body = raw_request(server.port, b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                  b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", chunks)
    grew = proc_kb(pid, "VmHWM") - before
    body = json.loads(body) if body.startswith(b"{") else body
    expect_error("a 40 MB chunked body", status, body, 413, mentions="%d bytes" % limit)
    if grew > 16 << 10:
        fail("a 40 MB chunked body over a %d-byte limit grew the server's RSS by %d MB" % (limit, grew >> 10))
    print("chunked 40 MB over --max-body: %s in %.1f s, peak RSS +%d MB" % (status, time.time() - start, grew >> 10))

    # 50 MB of zeros in ~50 KB of gzip: under the limit as sent, 50 times over it inflated.
    bomb = gzip.compress(b"\0" * (50 << 20), 9)
    reset_peak_rss(pid)
    before = proc_kb(pid, "VmRSS")
    status, _, text = server.request("POST", "/v1/completions", bomb, headers={"Content-Encoding": "gzip"})
    grew = proc_kb(pid, "VmHWM") - before
    expect_error("a gzip bomb (%d bytes, 50 MB inflated)" % len(bomb), status, json.loads(text), 413,
                 mentions="%d bytes" % limit)
    if grew > 16 << 10:
        fail("a gzip bomb inflating to 50 MB grew the server's RSS by %d MB" % (grew >> 10))
    print("gzip bomb of %d KB: %s, peak RSS +%d MB" % (len(bomb) >> 10, status, grew >> 10))

    request = {"prompt": PROMPT, "max_tokens": 4, "temperature": 0}
    _, plain_reply = server.post("/v1/completions", request)
    status, _, text = server.request("POST", "/v1/completions", gzip.compress(json.dumps(request).encode()),
                                     headers={"Content-Encoding": "gzip"})
    if status != 200 or json.loads(text)["choices"][0]["text"] != plain_reply["choices"][0]["text"]:
        fail("a gzip-encoded completion request: %s %s" % (status, text))
    status, _, text = server.request("POST", "/v1/completions", json.dumps(request), headers={"Content-Encoding": "br"})
    expect_error("Content-Encoding br", status, json.loads(text), 415, mentions="'br'")
    status, _, text = raw_request(server.port, b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                  b"application/json\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n" + json.dumps(request).encode()[:16] + b"\r\n" +
                                  b"%x\r\n" % (len(json.dumps(request)) - 16) + json.dumps(request).encode()[16:] +
                                  b"\r\n0\r\n\r\n")
    if status != 200 or json.loads(text)["choices"][0]["text"] != plain_reply["choices"][0]["text"]:
        fail("a chunked completion request under the limit: %s %r" % (status, text))
    # Two lengths that could disagree (request smuggling through a proxy) are refused.
    status, _, text = raw_request(server.port, b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n"
                                  b"Content-Length: 40\r\n\r\n{}")
    expect_error("two Content-Length headers", status, json.loads(text) if text.startswith(b"{") else text, 400,
                 mentions="more than one Content-Length")


def check_pipelining(server):
    """Requests written in one send on a kept-alive connection: every one answered, in order."""
    body = json.dumps({"prompt": PROMPT, "max_tokens": 3, "temperature": 0}).encode()
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=60)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                 b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s"
                 b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" % (len(body), body))
    data = b""
    start = time.time()
    try:
        while time.time() - start < 60:
            part = sock.recv(65536)
            if not part:
                break
            data += part
    except OSError as e:
        fail("pipelined requests: %s after %r" % (e, data))
    sock.close()
    statuses = re.findall(rb"HTTP/1\.1 (\d+)", data)
    if statuses != [b"200", b"200", b"200"] or b'"status":"ok"' not in data or b'"text_completion"' not in data or \
            b'"object":"list"' not in data:
        fail("three pipelined requests: answers %r: %r" % (statuses, data[-400:]))


def check_slow_clients(server, header_timeout, body_timeout, clients=60, seconds=15):
    """`clients` connections sending a byte a second (headers, or a body after its headers), each
    reconnecting when cut, while /health is asked every 0.5 s: every probe answers within 1 s,
    every slow connection is cut (408) within its deadline, and completions still work after."""
    stop = threading.Event()
    cuts = []  # (kind, seconds the connection lasted, first bytes of the answer)

    def dribble(kind):
        head = b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        payload = head + b"X-Slow: " + b"a" * 64 if kind == "headers" else b"{" * 1000
        while not stop.is_set():
            start = time.time()
            try:
                sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
                if kind == "body":
                    sock.sendall(head + b"Content-Length: 1000\r\n\r\n")
            except OSError:
                time.sleep(0.2)
                continue
            sent, got = 0, b""
            while not stop.is_set():
                readable, _, _ = select.select([sock], [], [], 1.0)
                try:
                    if readable:
                        part = sock.recv(4096)
                        if not part:
                            cuts.append((kind, time.time() - start, got[:40]))
                            break
                        got += part
                    elif sent < len(payload):
                        sock.send(payload[sent:sent + 1])
                        sent += 1
                except OSError:
                    cuts.append((kind, time.time() - start, got[:40]))
                    break
            sock.close()

    probes = []

    def probe():
        while not stop.is_set():
            probes.append(server.probe_health())
            time.sleep(max(0.0, 0.5 - probes[-1][1]))

    # A stream that outlasts both deadlines meanwhile: they bound reading a request, not
    # writing its answer.
    stream = {"events": 0, "first": None, "last": None, "done": False, "ended": False}

    def long_stream():
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        body = json.dumps({"prompt": LONG_PROMPT, "max_tokens": 1000, "stream": True, "ignore_eos": True}).encode()
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        try:
            while not stop.is_set():
                part = sock.recv(65536)
                if not part:
                    stream["ended"] = True
                    break
                stream["events"] += part.count(b"data: {")
                stream["first"] = stream["first"] or time.time()
                stream["last"] = time.time()
                if b"data: [DONE]" in part:
                    stream["done"] = True
                    break
        except OSError:
            stream["ended"] = True
        sock.close()  # gone mid-stream if still going: cancelled

    threads = [threading.Thread(target=dribble, args=("headers" if i % 2 == 0 else "body",), daemon=True)
               for i in range(clients)]
    threads.append(threading.Thread(target=long_stream, daemon=True))
    for t in threads:
        t.start()
    time.sleep(1)  # the slow clients connected first
    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    time.sleep(seconds)
    stop.set()
    prober.join()
    for t in threads:
        t.join(timeout=10)
    late = [p for p in probes if p[0] != 200 or p[1] > 1.0]
    if not probes or late:
        fail("/health under %d slow clients: %d of %d probes failed or took over 1 s: %r" %
             (clients, len(late), len(probes), late[:5]))
    for kind, limit in (("headers", header_timeout), ("body", body_timeout)):
        lasted = [c for c in cuts if c[0] == kind]
        if not lasted:
            fail("no connection sending its %s a byte a second was cut in %d s" % (kind, seconds))
            continue
        over = [c for c in lasted if c[1] > limit + 2.0]
        if over or not any(c[2].startswith(b"HTTP/1.1 408") for c in lasted):
            fail("slow %s: deadline %g s, connections lasted %r" % (kind, limit, sorted(c[1] for c in lasted)[-5:]))
    print("%d slow clients for %d s: %d cut, /health answered %d probes, slowest in %.3f s" %
          (clients, seconds, len(cuts), len(probes), max(p[1] for p in probes) if probes else 0))
    span = (stream["last"] - stream["first"]) if stream["first"] else 0
    outlast = 2 * max(header_timeout, body_timeout)
    if stream["ended"] or (not stream["done"] and span < outlast):
        fail("a stream during the slow clients was cut after %.1f s (%d events)" % (span, stream["events"]))
    elif span < outlast:
        print("the stream ended (%d events) in %.1f s, before the deadlines' %g s: not a check here" %
              (stream["events"], span, outlast))
    else:
        print("a stream ran %.1f s (%d events) past both deadlines" % (span, stream["events"]))
    status, body = server.post("/v1/completions", {"prompt": PROMPT, "max_tokens": 3, "temperature": 0})
    if status != 200:
        fail("a completion after the slow clients: %s %r" % (status, body))


def hold_connection(port):
    """A connection that has sent half a request head and waits."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"GET /health HTTP/1.1\r\n")  # a head never finished
    return sock


def refused_or_closed(sock):
    """Whether the server has written to a held connection (a 503 or a 408) or closed it."""
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable)


def check_connection_bound(plain, bound):
    """Past --max-connections connections that are sending requests, a new one gets 503 at once."""
    health = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sesame\r\n\r\n"
    # The held connections count once their threads have started: on a loaded machine that
    # can take a while, and until then a new connection is rightly served (200). A held one
    # may also be refused itself, while kept-alive connections of earlier checks still hold
    # places, or cut at --header-timeout: such a one is replaced. Once `bound` held ones
    # count, the next connection must be refused at once.
    held = [hold_connection(plain.port) for _ in range(bound)]
    deadline = time.time() + 20
    while True:
        for i, sock in enumerate(held):
            if refused_or_closed(sock):
                sock.close()
                held[i] = hold_connection(plain.port)
        start = time.time()
        status, headers, body = raw_request(plain.port, health, timeout=5)
        if status != 200 or time.time() > deadline:
            break
        time.sleep(0.2)
    if status != 503 or time.time() - start > 1.0 or b"--max-connections" not in body or "Retry-After" not in headers:
        fail("connection %d past --max-connections %d: %s in %.1f s: %r" % (bound + 1, bound, status,
                                                                           time.time() - start, body))
    for sock in held:
        sock.close()
    deadline = time.time() + 10
    while time.time() < deadline:
        status, _, _ = raw_request(plain.port, health, timeout=5)
        if status == 200:
            break
        time.sleep(0.2)
    else:
        fail("/health after the held connections closed: %s" % status)
