"""What vkf-server defends against, end to end (server_test.py runs these on its servers):

- non-streamed requests whose clients leave are cancelled: their KV blocks come back at once and
  new requests are served, not refused with 503;
- only the listening address's Host names are answered (DNS rebinding), no CORS headers unless
  --cors-origin names the origin (and then echoed, with Vary: Origin; preflights only for it),
  POST bodies only as application/json (415 otherwise);
- the bearer scheme in any case, /health without the key, the key from --api-key-file or
  VKF_API_KEY (two sources or an empty one refused), 405 with Allow for a method a route does
  not take;
- SIGTERM ends a running stream (an error event, then [DONE]) and a running non-streamed
  request (503) at once and exits 0 within 2 s; a second signal exits at once, 128 + it.
"""

import http.client
import json
import os
import signal
import socket
import subprocess
import threading
import time

from cli_checks import command, fail

ORIGIN = "http://app.example"


def raw_request(port, body, path="/v1/completions", headers=b""):
    """A POST on a socket of its own, left open: the caller reads or closes it."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    data = json.dumps(body).encode()
    sock.sendall(b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n%s"
                 b"Content-Length: %d\r\n\r\n%s" % (path.encode(), headers, len(data), data))
    return sock


def wait_metrics(server, what, ready, seconds, headers=None):
    """The metrics once `ready(m)` holds, polling for `seconds`; None (and a failure) if never."""
    deadline = time.time() + seconds
    m = server.metrics(headers=headers)
    while not ready(m):
        if time.time() > deadline:
            fail("%s within %.0f s: %r" % (what, seconds, {k: v for k, v in m.items() if "vkf_" in k and "{" not in k}))
            return None
        time.sleep(0.05)
        m = server.metrics(headers=headers)
    return m


def check_abandoned_requests(server, key):
    """Non-streamed requests (one running, one queued on --parallel 1 --queue 1) whose clients
    close after a second: within 2 s nothing runs, no KV block is held, and a new request is
    answered at once."""
    auth = b"Authorization: " + key["Authorization"].encode() + b"\r\n"
    body = {"prompt": "In the", "max_tokens": 1000, "ignore_eos": True}
    socks = [raw_request(server.port, body, headers=auth) for _ in range(2)]
    if wait_metrics(server, "two non-streamed requests running and queued",
                    lambda m: m["vkf_active_sequences"] == 1 and m["vkf_queued_requests"] == 1, 30, key) is None:
        return
    time.sleep(1)
    for sock in socks:
        sock.close()
    m = wait_metrics(server, "abandoned non-streamed requests freed (0 active, 0 queued, 0 KV blocks)",
                     lambda m: (m["vkf_active_sequences"], m["vkf_queued_requests"], m["vkf_kv_blocks_used"]) ==
                     (0, 0, 0), 2, key)
    if m is None:
        return
    generated = m["vkf_generated_tokens_total"]
    time.sleep(0.5)
    if server.metrics(headers=key)["vkf_generated_tokens_total"] != generated:
        fail("tokens are still generated for clients that left")
    start = time.time()
    status, reply = server.post("/v1/completions", {"prompt": "In the", "max_tokens": 2}, headers=key)
    if status != 200 or time.time() - start > 10:
        fail("a request after abandoned ones: %s %r after %.1f s" % (status, reply, time.time() - start))


def expect_status(what, got, want, body=None):
    status, headers, text = got
    if status != want:
        fail("%s: expected %d, got %d %s" % (what, want, status, text[:300]))
        return headers
    if body is not None:
        error = json.loads(text).get("error", {})
        if error.get("code") != body:
            fail("%s: expected an error object with code %r, got %s" % (what, body, text[:300]))
    return headers


def request_with_host(server, method, path, host, body=None, headers=None):
    """A request whose Host header is `host` (None: none at all)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    if host is not None:
        conn.putheader("Host", host)
    data = json.dumps(body).encode() if body is not None else b""
    for name, value in dict({"Content-Type": "application/json", "Content-Length": str(len(data))},
                            **(headers or {})).items():
        conn.putheader(name, value)
    conn.endheaders(data)
    resp = conn.getresponse()
    text = resp.read().decode("utf-8")
    conn.close()
    return resp.status, dict(resp.getheaders()), text


def check_browser_defences(server):
    """A server started with --cors-origin ORIGIN on 127.0.0.1."""
    completion = {"prompt": "In the", "max_tokens": 2}
    for host in ("127.0.0.1", "localhost:%d" % server.port, "LOCALHOST", "[::1]:%d" % server.port):
        expect_status("Host %s" % host, request_with_host(server, "GET", "/v1/models", host), 200)
    for host in ("evil.example", "evil.example:%d" % server.port, "127.0.0.1.evil.example", None):
        expect_status("Host %r" % host, request_with_host(server, "GET", "/v1/models", host), 403, "host_not_allowed")
    expect_status("a POST for Host evil.example", request_with_host(server, "POST", "/v1/completions", "evil.example",
                                                                    completion), 403, "host_not_allowed")
    for content_type in ("text/plain", "application/x-www-form-urlencoded", ""):
        status, headers, text = server.request("POST", "/v1/completions", completion,
                                               headers={"Content-Type": content_type})
        expect_status("Content-Type %r" % content_type, (status, headers, text), 415, "unsupported_media_type")
        if status == 415 and content_type and content_type not in text:
            fail("the 415 does not name %r: %s" % (content_type, text))
    expect_status("Content-Type application/json; charset=utf-8", server.request(
        "POST", "/v1/completions", completion, headers={"Content-Type": "application/json; charset=utf-8"}), 200)

    headers = expect_status("a GET from the allowed origin",
                            server.request("GET", "/v1/models", headers={"Origin": ORIGIN}), 200)
    if headers.get("Access-Control-Allow-Origin") != ORIGIN or "Origin" not in headers.get("Vary", ""):
        fail("the allowed origin is not echoed with Vary: Origin: %r" % headers)
    headers = expect_status("a GET from another origin",
                            server.request("GET", "/v1/models", headers={"Origin": "http://evil.example"}), 200)
    if "Access-Control-Allow-Origin" in headers:
        fail("another origin got Access-Control-Allow-Origin: %r" % headers)
    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"}
    headers = expect_status("a preflight from the allowed origin", server.request(
        "OPTIONS", "/v1/chat/completions", headers=dict(preflight, Origin=ORIGIN)), 204)
    if headers.get("Access-Control-Allow-Origin") != ORIGIN or "POST" not in headers.get(
            "Access-Control-Allow-Methods", "") or "Authorization" not in headers.get("Access-Control-Allow-Headers", ""):
        fail("the preflight of the allowed origin: %r" % headers)
    headers = expect_status("a preflight from another origin", server.request(
        "OPTIONS", "/v1/chat/completions", headers=dict(preflight, Origin="http://evil.example")), 403,
        "origin_not_allowed")
    if "Access-Control-Allow-Origin" in headers:
        fail("a refused preflight got Access-Control-Allow-Origin: %r" % headers)

    for method, path, allow in (("PUT", "/v1/completions", "POST"), ("PATCH", "/v1/chat/completions", "POST"),
                                ("DELETE", "/v1/models", "GET"), ("GET", "/v1/completions", "POST"),
                                ("POST", "/health", "GET")):
        headers = expect_status("%s %s" % (method, path), server.request(method, path, {}), 405, "method_not_allowed")
        if allow not in headers.get("Allow", ""):
            fail("%s %s: the 405 has no Allow naming %s: %r" % (method, path, allow, headers))


def check_key_and_health(plain, key):
    """A server with an API key and no --cors-origin."""
    headers = expect_status("an Origin without --cors-origin",
                            plain.request("GET", "/v1/models", headers=dict(key, Origin=ORIGIN)), 200)
    if any(name.lower().startswith("access-control-") for name in headers):
        fail("CORS headers without --cors-origin: %r" % headers)
    secret = key["Authorization"].split(" ", 1)[1]
    for auth in ("bearer " + secret, "BEARER " + secret, "Bearer  " + secret):
        expect_status("Authorization: %s" % auth, plain.request("GET", "/v1/models", headers={"Authorization": auth}),
                      200)
    expect_status("Authorization: Basic", plain.request("GET", "/v1/models", headers={"Authorization": "Basic " +
                                                                                      secret}), 401)
    expect_status("/health without the key", plain.request("GET", "/health"), 200)
    expect_status("/metrics without the key", plain.request("GET", "/metrics"), 401)


def check_key_sources(server_exe, key_file):
    """The key from one place only, never empty (refused before the model is read)."""
    cases = [(["--api-key", "a", "--api-key-file", key_file], {}, "--api-key and --api-key-file"),
             (["--api-key", "a"], {"VKF_API_KEY": "b"}, "--api-key and VKF_API_KEY"),
             (["--api-key-file", key_file], {"VKF_API_KEY": "b"}, "--api-key-file and VKF_API_KEY"),
             ([], {"VKF_API_KEY": ""}, "VKF_API_KEY is set but empty"),
             (["--api-key", "a b"], {}, "a space")]
    empty = key_file + ".empty"
    with open(empty, "w", encoding="utf-8") as f:
        f.write("\n")
    cases.append((["--api-key-file", empty], {}, "holds no key"))
    for args, env, text in cases:
        proc = subprocess.run(command(server_exe, ["--model", "/nonexistent"] + args), capture_output=True, text=True,
                              timeout=60, env=dict(os.environ, **env))
        if proc.returncode != 2 or text not in proc.stderr:
            fail("vkf-server %s %r: expected exit 2 naming %r, got %d: %s" % (" ".join(args), env, text,
                                                                            proc.returncode, proc.stderr.strip()))


def read_all(sock):
    """What arrives on `sock` until its end (or an error, then named at the end)."""
    out = b""
    try:
        while True:
            part = sock.recv(65536)
            if not part:
                return out
            out += part
    except OSError as e:
        return out + (" [%r]" % e).encode()


def dechunk(raw):
    """The body of a chunked HTTP response, and whether its last (empty) chunk came."""
    head, _, rest = raw.partition(b"\r\n\r\n")
    body = b""
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        try:
            size = int(size_line, 16)
        except ValueError:
            return body, False
        if size == 0:
            return body, True
        body += rest[:size]
        rest = rest[size + 2:]
    return body, False


def check_signal_stop(server):
    """A stream and a non-streamed request running and an idle keep-alive connection open,
    then SIGTERM: the stream ends with an error event and [DONE], the other gets 503, and the
    process exits 0 within 2 s (not held up by the idle connection's keep-alive wait)."""
    idle = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    idle.request("GET", "/health")
    idle.getresponse().read()
    body = {"prompt": "In the beginning", "max_tokens": 900, "ignore_eos": True}
    stream = raw_request(server.port, dict(body, stream=True))
    whole = raw_request(server.port, body)
    replies = {}
    readers = [threading.Thread(target=lambda k=k, s=s: replies.__setitem__(k, read_all(s)))
               for k, s in (("stream", stream), ("whole", whole))]
    for t in readers:
        t.start()
    if wait_metrics(server, "a stream and a whole request running",
                    lambda m: m["vkf_active_sequences"] == 2 and m["vkf_generated_tokens_total"] > 20, 60) is None:
        return
    start = time.time()
    server.proc.send_signal(signal.SIGTERM)
    try:
        code = server.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        code = server.proc.wait()
    took = time.time() - start
    idle.close()
    for t in readers:
        t.join(timeout=10)
    if took > 2 or code != 0:
        fail("SIGTERM with requests running: exit %d after %.2f s (want 0 within 2 s)" % (code, took))
    else:
        print("SIGTERM with a stream and a whole request running: exit 0 after %.2f s" % took)
    body, whole_body = dechunk(replies.get("stream", b""))
    text = body.decode("utf-8", "replace")
    events = [e for e in text.split("\n\n") if e.startswith("data: ")]
    if len(events) < 2 or events[-1] != "data: [DONE]" or \
            json.loads(events[-2][6:]).get("error", {}).get("code") != "server_shutting_down":
        fail("the stream cut by SIGTERM does not end with an error event and [DONE]: %r" % text[-400:])
    if not whole_body:
        fail("the stream cut by SIGTERM has no last chunk: %r" % text[-100:])
    text = replies.get("whole", b"").decode("utf-8", "replace")
    if not text.startswith("HTTP/1.1 503") or "server_shutting_down" not in text:
        fail("the non-streamed request cut by SIGTERM: %r" % text[:400])


def check_second_signal(server):
    """SIGINT and SIGTERM together (the process paused while both arrive, so that one is
    second): the process exits at once, 128 + the second (SIGTERM: 143), not after draining
    the 1000-token request (tens of seconds on lavapipe). "At once" allows 4 s: a loaded CI
    machine took 1.3 s to run the exit."""
    sock = raw_request(server.port, {"prompt": "In the", "max_tokens": 1000, "ignore_eos": True},
                       headers=b"Authorization: Bearer sesame\r\n")
    time.sleep(1)
    server.proc.send_signal(signal.SIGSTOP)
    server.proc.send_signal(signal.SIGINT)
    server.proc.send_signal(signal.SIGTERM)
    start = time.time()
    server.proc.send_signal(signal.SIGCONT)
    try:
        code = server.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        code = server.proc.wait()
    took = time.time() - start
    sock.close()
    if code != 128 + signal.SIGTERM or took > 4:
        fail("two signals: exit %d after %.2f s (want %d at once)" % (code, took, 128 + signal.SIGTERM))
    else:
        print("two signals: exit %d after %.2f s" % (code, took))
