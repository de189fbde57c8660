#!/usr/bin/env python3
"""vkf-server end to end on lavapipe with models/kjv-bloom (given a ChatML tokenizer_config.json,
so its chat format is detected) and a tiny JinaBERT checkpoint from vkf-make-checkpoint:

- 16 concurrent temperature-0 requests (8 prompts, each streamed and not) return exactly the
  text vkf-run gives each prompt alone;
- the raw SSE framing (curl): only `data: <json>` events (and `: keep-alive` comments) and blank
  lines, `data: [DONE]` last;
- the official OpenAI Node SDK (npm "openai", cached in NPM_DIR) drives completions, chat,
  streaming, embeddings and an error (skipped, and said, without node or npm);
- a client that disconnects mid-stream has its sequence cancelled and its KV blocks freed
  (/metrics back to 0 active, 0 blocks used);
- the sampler chain (server_sampling.py): every sampler field gives vkf-run's text for the seed;
- OpenAI's shapes (server_schema.py): message.refusal, several prompts, GET /v1/models/{id},
  logprobs (completions, chat, streamed) and echo;
- malformed JSON gets 400 and an error object, and the server goes on serving; unknown routes 404;
- a second server with --api-key, a small --max-body, --parallel 1 --queue 1 and no chat
  format: 401 without the key, 413 over the body limit, 503 with Retry-After past the queue,
  400 naming the limit for long prompts and max_tokens, a chat request refused with the reason;
- a third server with --devices 0,0 (the layers split over two Contexts on the one device,
  pipelined: apps/server/devices.cpp): 8 concurrent temperature-0 requests return what the
  first server (and vkf-run) gives, a client gone mid-stream frees its blocks, and the stages
  overlapped (its pipeline line on stderr);
- the transport's guard (apps/server/guarded_server.hpp): a chunked body and a gzip bomb over
  --max-body get 413 naming the limit and leave the server's peak RSS within a few MB (it stops
  reading and inflating at the limit); a gzip body under it is served, a br one refused (415);
  two requests pipelined in one send both answered; 60 clients sending a byte a second (headers
  or body) cut at --header-timeout / --body-timeout with 408 while /health answers every probe
  within 1 s; past --max-connections a new connection gets 503 at once;
- the defences of server_defences.py: abandoned non-streamed requests cancelled, Host checks,
  CORS only for --cors-origin, JSON bodies only, the key's scheme in any case and its sources
  (--api-key-file for the third server, VKF_API_KEY for the second), /health without it, 405s,
  and the stop on SIGTERM (the first server, with requests running) or on two signals (the
  second);
- every /v1 answer read through Server.request (errors included) validates against OpenAI's
  OpenAPI description (openapi_check.py; skipped, and said, without python3-jsonschema);
- the servers stop cleanly on SIGTERM, and no Vulkan validation message is printed.

usage: server_test.py VKF_SERVER VKF_RUN VKF_MAKE_CHECKPOINT KJV_BLOOM_DIR NPM_DIR
"""

import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_checks import command, fail, finish, run  # noqa: E402
from server_process import ServerProcess  # noqa: E402
import server_defences  # noqa: E402
from server_sampling import check_sampler_chain  # noqa: E402
from server_schema import check_echo, check_logprobs, check_response_shapes  # noqa: E402
from server_checks import (check_body_limits, check_connection_bound, check_pipelining,  # noqa: E402
                           check_slow_clients, expect_error)
try:  # every /v1 answer of Server.request against OpenAI's OpenAPI description (openapi_check.py)
    from openapi_check import AnswerCheck, OpenApi  # noqa: E402
    ANSWERS = AnswerCheck(OpenApi())
except ImportError as e:
    print("OpenAPI checks skipped: %s (scripts/deps.sh installs python3-jsonschema and python3-yaml)" % e)
    ANSWERS = None

SERVER, RUN, MAKE, KJV, NPM_DIR = sys.argv[1:6]
HERE = os.path.dirname(os.path.abspath(__file__))
OPENAI = ("openai", "6.49.0")
CHATML_TEMPLATE = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
                   "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
                   "{% endif %}")
PROMPTS = ["In the beginning God", "And the LORD said unto Moses", "Blessed are", "For God so loved",
           "The LORD is my shepherd; I shall not want.", "And it came to pass", "Thou shalt", "Let there be"]
MAX_TOKENS = 24


class Server(ServerProcess):
    """vkf-server with `args` on a free port."""

    def __init__(self, args, env=None, headers=None):
        super().__init__(command(SERVER, args + ["--port", "0"]), env, headers)

    def request(self, method, path, body=None, headers=None, timeout=300):
        status, got_headers, text = super().request(method, path, body, headers, timeout)
        if ANSWERS is not None and text:
            ANSWERS.answer("%s %s" % (method, path), path, status, got_headers.get("Content-Type"), text)
        return status, got_headers, text


def stream_events(server, body, headers=None):
    """The SSE events of a streamed request: the JSON objects, then whether [DONE] ended it."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=300)
    conn.request("POST", "/v1/completions", body=json.dumps(body),
                 headers=dict({"Content-Type": "application/json"}, **(headers or {})))
    resp = conn.getresponse()
    raw = resp.read().decode("utf-8")
    conn.close()
    # Comment events (": keep-alive", sent while a cold start compiles shaders) carry no data.
    events = [e for e in raw.split("\n\n") if e and not e.startswith(":")]
    done = events and events[-1] == "data: [DONE]"
    return [json.loads(e[len("data: "):]) for e in events if e != "data: [DONE]"], done


def vkf_run_text(prompt):
    proc = run(RUN, ["--model", KJV, "--prompt", prompt, "--n-predict", str(MAX_TOKENS), "--json", "--quiet"])
    if proc.returncode != 0:
        fail("vkf-run failed: " + proc.stderr)
        return None, 0
    result = json.loads(proc.stdout)
    return result["text"], len(result["generated_ids"])


def check_determinism(server):
    """16 concurrent temperature-0 requests against vkf-run alone."""
    expected = {p: vkf_run_text(p) for p in PROMPTS}
    results = {}

    def one(i):
        prompt = PROMPTS[i % len(PROMPTS)]
        body = {"prompt": prompt, "max_tokens": MAX_TOKENS, "temperature": 0}
        if i >= len(PROMPTS):
            events, done = stream_events(server, dict(body, stream=True))
            results[i] = ("".join(e["choices"][0]["text"] for e in events if e["choices"]), done)
        else:
            status, reply = server.post("/v1/completions", body)
            results[i] = (reply["choices"][0]["text"] if status == 200 else "HTTP %d %r" % (status, reply), True)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(16):
        prompt = PROMPTS[i % len(PROMPTS)]
        text, done = results.get(i, (None, False))
        if text != expected[prompt][0] or not done:
            fail("request %d (%r%s): %r, vkf-run alone: %r" % (i, prompt, ", streamed" if i >= 8 else "", text,
                                                              expected[prompt][0]))
    return expected


def check_sse_framing(server):
    if shutil.which("curl") is None:
        print("curl is not installed: raw SSE framing not checked")
        return
    proc = subprocess.run(["curl", "-sN", server.base + "/v1/completions", "-H", "Content-Type: application/json",
                           "-d", json.dumps({"prompt": PROMPTS[0], "max_tokens": 6, "temperature": 0, "stream": True,
                                             "stream_options": {"include_usage": True}})],
                          capture_output=True, text=True, timeout=300)
    raw = proc.stdout
    if not raw.endswith("data: [DONE]\n\n"):
        fail("SSE stream does not end with 'data: [DONE]\\n\\n': %r" % raw[-80:])
    # SSE comments (": keep-alive" while the server is silent for seconds) are valid framing.
    events = [e for e in raw.split("\n\n")[:-1] if not (e.startswith(": ") and "\n" not in e)]
    for e in events[:-1]:
        if not e.startswith("data: {") or "\n" in e:
            fail("SSE event is not one 'data: {json}' line: %r" % e)
            continue
        chunk = json.loads(e[len("data: "):])
        if chunk["object"] != "text_completion":
            fail("SSE chunk object %r" % chunk["object"])
    last = json.loads(events[-2][len("data: "):])
    if last.get("choices") != [] or last.get("usage", {}).get("completion_tokens") != 6:
        fail("SSE usage chunk: %r" % last)


def check_sdk(server, expected, hidden):
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            print("SDK checks skipped: %s is not installed (scripts/deps.sh installs Node.js and npm)" % tool)
            return
    name, version = OPENAI
    folder = os.path.join(NPM_DIR, "node_modules", name)
    manifest = os.path.join(folder, "package.json")
    installed = os.path.exists(manifest) and json.load(open(manifest, encoding="utf-8")).get("version") == version
    if not installed:
        os.makedirs(NPM_DIR, exist_ok=True)
        proc = subprocess.run(["npm", "install", "--prefix", NPM_DIR, "--no-audit", "--no-fund",
                               "%s@%s" % (name, version)], capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or not os.path.exists(manifest):
            print("SDK checks skipped: npm could not install %s@%s (registry unreachable?):\n%s" %
                  (name, version, proc.stderr.strip()[-1000:]))
            return
    entry = os.path.join(folder, "index.mjs")
    case = {"models": ["chat-kjv", "enc"], "decoder": "chat-kjv", "encoder": "enc", "prompt": PROMPTS[1],
            "max_tokens": MAX_TOKENS, "expected": expected[PROMPTS[1]][0], "expected_tokens": expected[PROMPTS[1]][1],
            "embed": ["hello world", "the quick brown fox"], "hidden": hidden}
    proc = subprocess.run(["node", os.path.join(HERE, "server_sdk_test.mjs"), "file://" + entry, server.base + "/v1",
                           json.dumps(case)], capture_output=True, text=True, timeout=600)
    print(proc.stdout.strip())
    if proc.returncode != 0:
        fail("the openai SDK checks failed: %s %s" % (proc.stdout, proc.stderr))


def check_disconnect(server):
    """A client gone mid-stream: its sequence is cancelled and its blocks freed."""
    before = server.metrics().get("vkf_cancelled_sequences_total", 0)
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=60)
    body = json.dumps({"prompt": PROMPTS[2], "max_tokens": 900, "temperature": 0, "stream": True,
                       "ignore_eos": True}).encode()
    auth = "".join("%s: %s\r\n" % h for h in server.headers.items()).encode()
    sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n%s"
                 b"Content-Length: %d\r\n\r\n%s" % (auth, len(body), body))
    got = b""
    while got.count(b"data: ") < 2:
        part = sock.recv(4096)
        if not part:
            break
        got += part
    sock.close()
    deadline = time.time() + 30
    while time.time() < deadline:
        m = server.metrics()
        if m["vkf_active_sequences"] == 0 and m["vkf_kv_blocks_used"] == 0:
            break
        time.sleep(0.1)
    m = server.metrics()
    if m["vkf_active_sequences"] != 0 or m["vkf_kv_blocks_used"] != 0:
        fail("after a client left mid-stream: %d active, %d KV blocks used" % (m["vkf_active_sequences"],
                                                                               m["vkf_kv_blocks_used"]))
    if m.get("vkf_cancelled_sequences_total", 0) != before + 1:
        fail("the disconnected stream was not cancelled (it ran to its end): %r" % m)


def check_errors(server):
    status, body = server.post("/v1/completions", '{"prompt": "In the", "max_tokens": ')
    expect_error("malformed JSON", status, body, 400, mentions="not valid JSON")
    status, body = server.post("/v1/completions", {"prompt": "x", "temperature": "hot"})
    expect_error("temperature as text", status, body, 400, param="temperature")
    status, body = server.post("/v1/chat/completions", {"messages": [{"role": "wizard", "content": "x"}]})
    expect_error("unknown role", status, body, 400, param="messages", mentions="wizard")
    status, body = server.post("/v1/embeddings", {"input": "hello", "model": "enc"})
    if status != 200 or len(body["data"][0]["embedding"]) == 0:
        fail("embeddings after errors: %s %r" % (status, body))
    status, _, text = server.request("GET", "/v1/nothing")
    expect_error("unknown route", status, json.loads(text), 404)
    status, body = server.post("/v1/completions", {"prompt": PROMPTS[0], "max_tokens": 3, "temperature": 0})
    if status != 200:
        fail("the server stopped serving after bad requests: %s %r" % (status, body))
    # n choices: seeds seed, seed + 1, ...; the same request again gives the same choices.
    request = {"prompt": PROMPTS[3], "max_tokens": 5, "temperature": 0.9, "seed": 11, "n": 3}
    status, body = server.post("/v1/completions", request)
    _, again = server.post("/v1/completions", request)
    if status != 200 or sorted(c["index"] for c in body["choices"]) != [0, 1, 2] or \
            not 3 <= body["usage"]["completion_tokens"] <= 15 or \
            any(c["finish_reason"] not in ("stop", "length") for c in body["choices"]):
        fail("n=3: %s %r" % (status, body))
    elif [c["text"] for c in body["choices"]] != [c["text"] for c in again["choices"]]:
        fail("n=3 with a seed: %r, then %r" % (body["choices"], again["choices"]))
    status, _, text = server.request("GET", "/health")
    if status != 200 or json.loads(text)["status"] != "ok":
        fail("/health: %s %s" % (status, text))


def check_devices(expected, key_file):
    """--devices 0,0: one device twice stands in for two; the completions of one device. The
    key from --api-key-file."""
    split = Server(["--model", KJV, "--devices", "0,0", "--split", "auto", "--parallel", "4", "--ctx", "1024",
                    "--api-key-file", key_file], headers={"Authorization": "Bearer opensesame"})
    results = {}

    def one(prompt):
        status, reply = split.post("/v1/completions", {"prompt": prompt, "max_tokens": MAX_TOKENS, "temperature": 0})
        results[prompt] = reply["choices"][0]["text"] if status == 200 else "HTTP %d %r" % (status, reply)

    try:
        threads = [threading.Thread(target=one, args=(p,)) for p in PROMPTS]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for prompt in PROMPTS:
            if results.get(prompt) != expected[prompt][0]:
                fail("--devices 0,0, %r: %r, one device: %r" % (prompt, results.get(prompt), expected[prompt][0]))
        check_disconnect(split)
    finally:
        split.stop()
    err = "".join(split.stderr)
    stages = re.findall(r"stage (\d): layers", err)
    pipeline = re.search(r"pipeline: (\d+) steps over 2 devices, (\d+) overlapped", err)
    if stages != ["0", "1"] or not pipeline or int(pipeline.group(2)) == 0:
        fail("--devices 0,0: no two stages or no overlapped steps on stderr:\n" + err)
    else:
        print("--devices 0,0: %s steps, %s overlapped" % pipeline.groups())


def check_limits(plain):
    """--api-key, --max-body, --max-prompt-tokens, --parallel 1 --queue 1, no chat format."""
    key = {"Authorization": "Bearer sesame"}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "sesame"}):
        status, _, text = plain.request("GET", "/v1/models", headers=headers)
        expect_error("no or a wrong key %r" % headers, status, json.loads(text), 401)
    status, _, text = plain.request("GET", "/v1/models", headers=key)
    if status != 200 or json.loads(text)["data"][0]["id"] != "kjv-bloom":
        fail("/v1/models with the key: %s %s" % (status, text))
    status, body = plain.post("/v1/completions", {"prompt": "x" * 5000}, headers=key)
    expect_error("a body over --max-body", status, body, 413, mentions="4096 bytes")
    status, body = plain.post("/v1/completions", {"prompt": " ".join(["the"] * 40)}, headers=key)
    expect_error("a long prompt", status, body, 400, param="prompt", mentions="--max-prompt-tokens")
    status, body = plain.post("/v1/completions", {"prompt": "In the", "max_tokens": 1024}, headers=key)
    expect_error("max_tokens over the context", status, body, 400, param="max_tokens", mentions="--ctx")
    status, body = plain.post("/v1/completions", {"prompt": "In the", "max_tokens": 5000}, headers=key)
    expect_error("max_tokens over the limit", status, body, 400, param="max_tokens", mentions="--max-tokens")
    status, body = plain.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}, headers=key)
    expect_error("chat without a chat format", status, body, 400, param="messages", mentions="--chat-format")

    # One stream takes the slot, one the queue place; the third is refused at once.
    held = []
    for _ in range(2):
        sock = socket.create_connection(("127.0.0.1", plain.port), timeout=60)
        body = json.dumps({"prompt": "In the", "max_tokens": 1000, "stream": True, "ignore_eos": True}).encode()
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sesame\r\n"
                     b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        held.append(sock)
    deadline = time.time() + 30
    while time.time() < deadline:
        m = plain.metrics(headers=key)
        if m["vkf_active_sequences"] == 1 and m["vkf_queued_requests"] == 1:
            break
        time.sleep(0.02)
    else:
        fail("the two streams did not fill the slot and the queue: %r" % m)
    start = time.time()
    status, headers, text = plain.request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 2}, headers=key)
    expect_error("past the queue", status, json.loads(text), 503, mentions="--queue")
    if status == 503 and headers.get("Retry-After") is None:
        fail("503 without Retry-After")
    if time.time() - start > 5:
        fail("the 503 took %.1f s" % (time.time() - start))
    for sock in held:
        sock.close()
    deadline = time.time() + 60
    while time.time() < deadline:
        m = plain.metrics(headers=key)
        if m["vkf_active_sequences"] == 0 and m["vkf_queued_requests"] == 0 and m["vkf_kv_blocks_used"] == 0:
            break
        time.sleep(0.1)
    else:
        fail("the held streams did not end: %r" % plain.metrics(headers=key))
    status, body = plain.post("/v1/completions", {"prompt": "In the", "max_tokens": 2}, headers=key)
    if status != 200:
        fail("completion after the 503s: %s %r" % (status, body))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        chat_model = os.path.join(tmp, "chat-kjv")
        os.makedirs(chat_model)
        for name in ("config.json", "model.safetensors", "tokenizer.json"):
            os.symlink(os.path.join(os.path.abspath(KJV), name), os.path.join(chat_model, name))
        with open(os.path.join(chat_model, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump({"chat_template": CHATML_TEMPLATE, "eos_token": "<|endoftext|>"}, f)
        encoder = os.path.join(tmp, "enc")
        proc = run(MAKE, ["--out", encoder, "--family", "jina-bert", "--preset", "tiny", "--seed", "3"])
        if proc.returncode != 0:
            raise SystemExit("vkf-make-checkpoint failed: " + proc.stderr)
        shutil.copy(os.path.join(HERE, "..", "text", "data", "bert_wordpiece.json"),
                    os.path.join(encoder, "tokenizer.json"))
        hidden = json.load(open(os.path.join(encoder, "config.json"), encoding="utf-8"))["hidden_size"]

        server = Server(["--model", chat_model, "--embedding-model", encoder, "--parallel", "16", "--queue", "8",
                         "--ctx", "1024", "--header-timeout", "3", "--body-timeout", "3", "--cors-origin", server_defences.ORIGIN])
        try:
            expected = check_determinism(server)
            check_sse_framing(server)
            check_sdk(server, expected, hidden)
            check_disconnect(server)
            check_errors(server)
            check_sampler_chain(server, RUN, KJV)
            check_response_shapes(server)
            check_logprobs(server)
            check_echo(server)
            check_body_limits(server, 1 << 20)
            check_pipelining(server)
            check_slow_clients(server, 3, 3)
            server_defences.check_browser_defences(server)
            server_defences.check_signal_stop(server)
        finally:
            server.stop()
        key_file = os.path.join(tmp, "key")
        with open(key_file, "w", encoding="utf-8") as f:
            f.write("opensesame\n")
        server_defences.check_key_sources(SERVER, key_file)
        check_devices(expected, key_file)

        key = {"Authorization": "Bearer sesame"}
        plain = Server(["--model", KJV, "--max-body", "4096", "--parallel", "1", "--queue", "1", "--ctx", "1024",
                        "--max-prompt-tokens", "16", "--max-connections", "6", "--quiet"], env={"VKF_API_KEY": "sesame"})
        try:
            check_limits(plain)
            check_connection_bound(plain, 6)
            server_defences.check_key_and_health(plain, key)
            server_defences.check_abandoned_requests(plain, key)
            server_defences.check_second_signal(plain)
        finally:
            plain.stop()
    if ANSWERS is not None:
        print("OpenAPI: %d answers checked, %d violations" % (ANSWERS.checked, len(ANSWERS.violations)))
        for v in ANSWERS.violations[:40]:
            fail(v)
    return finish("vkf-server: OK")


if __name__ == "__main__":
    sys.exit(main())
