#!/usr/bin/env python3
"""vkf-server's prefix cache (issue 42) end to end, on the shipped kjv-bloom:

- a second request that starts with the first one's long prompt reports
  usage.prompt_tokens_details.cached_tokens >= 90% of its prompt (non-streamed, in the streamed
  usage chunk, and for chat), with the greedy text of a cold run;
- another cache_salt shares nothing (0 cached tokens, the same text), and a cache_salt that is
  not a string is refused (400 naming it);
- /metrics counts lookups, hit tokens, cached blocks and (with a small pool) evictions;
- --no-prefix-cache reports 0 cached tokens and looks nothing up;
- over --devices 0,0 (a layer split of one device twice) the same hit and text.

usage: server_prefix_cache.py VKF_SERVER KJV_BLOOM_DIR
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_checks import command, fail, finish  # noqa: E402
from server_process import ServerProcess  # noqa: E402

SERVER, KJV = sys.argv[1:3]
# About 400 tokens of the model's own kind of text: 25 blocks of 16.
PREAMBLE = " ".join(["In the beginning God created the heaven and the earth. And the earth was without form, and void;"
                     " and darkness was upon the face of the deep."] * 12)
MAX_TOKENS = 8


def cached(usage):
    return usage.get("prompt_tokens_details", {}).get("cached_tokens")


def complete(server, prompt, **extra):
    """(text, usage) of a greedy completion; (None, {}) and a failure when it is refused."""
    status, body = server.post("/v1/completions", dict({"prompt": prompt, "max_tokens": MAX_TOKENS,
                                                        "temperature": 0}, **extra))
    if status != 200:
        fail("%r...: HTTP %d %r" % (prompt[:20], status, body))
        return None, {}
    return body["choices"][0]["text"], body["usage"]


def streamed_usage(server, prompt, **extra):
    """The usage chunk of a streamed greedy completion (stream_options.include_usage), and its text."""
    body = dict({"prompt": prompt, "max_tokens": MAX_TOKENS, "temperature": 0, "stream": True,
                 "stream_options": {"include_usage": True}}, **extra)
    status, _, raw = server.request("POST", "/v1/completions", body)
    events = [json.loads(e[len("data: "):]) for e in raw.split("\n\n")
              if e.startswith("data: ") and e != "data: [DONE]"]
    if status != 200 or not events or "usage" not in events[-1]:
        fail("streamed: HTTP %d %r" % (status, raw[-300:]))
        return {}, None
    text = "".join(c["text"] for e in events for c in e.get("choices", []))
    return events[-1]["usage"], text


def expect_hit(what, usage, text, cold_text):
    share = cached(usage) / usage["prompt_tokens"] if usage and cached(usage) is not None else 0
    if share < 0.9:
        fail("%s: %r of %r prompt tokens cached, expected >= 90%%" % (what, cached(usage), usage.get("prompt_tokens")))
    if text != cold_text:
        fail("%s: %r after a cache hit, %r cold" % (what, text, cold_text))
    print("%s: %d of %d prompt tokens cached" % (what, cached(usage) or 0, usage.get("prompt_tokens", 0)))


def check_cache(server):
    """A hit, salts, streaming, chat and the metrics on a server with the cache (the default)."""
    first, usage = complete(server, PREAMBLE)
    if cached(usage) != 0:
        fail("the first request: cached_tokens %r, expected 0" % cached(usage))
    longer = PREAMBLE + " And God said"
    warm, usage = complete(server, longer)
    # The same prompt under another salt shares nothing: a cold run, whose text must match.
    cold, cold_usage = complete(server, longer, cache_salt="tenant-b")
    if cached(cold_usage) != 0:
        fail("another cache_salt: cached_tokens %r, expected 0" % cached(cold_usage))
    expect_hit("the longer prompt", usage, warm, cold)
    # Salted requests share among themselves.
    salted, usage = complete(server, longer + " unto", cache_salt="tenant-b")
    if not cached(usage) or cached(usage) < 0.9 * usage["prompt_tokens"]:
        fail("the same cache_salt again: %r" % usage)
    usage, text = streamed_usage(server, longer)
    expect_hit("streamed", usage, text, cold)
    messages = [{"role": "system", "content": PREAMBLE}, {"role": "user", "content": "Who made the earth?"}]
    first_turn = 0
    for turn in range(2):
        status, body = server.post("/v1/chat/completions", {"messages": messages, "max_tokens": MAX_TOKENS,
                                                            "temperature": 0})
        if status != 200:
            fail("chat turn %d: HTTP %d %r" % (turn, status, body))
            return
        # Turn 2 takes all of turn 1's prompt but its last partial block.
        if turn == 1 and cached(body["usage"]) < first_turn - 16:
            fail("chat turn 2: %r after a turn of %d prompt tokens" % (body["usage"], first_turn))
        first_turn = body["usage"]["prompt_tokens"]
        messages += [{"role": "assistant", "content": body["choices"][0]["message"]["content"]},
                     {"role": "user", "content": "And then?"}]
    for bad in (7, ["a"], ""):
        status, body = server.post("/v1/completions", {"prompt": "x", "max_tokens": 1, "cache_salt": bad})
        if status != 400 or body.get("error", {}).get("param") != "cache_salt":
            fail("cache_salt %r: HTTP %d %r, expected 400 naming cache_salt" % (bad, status, body))
    m = server.metrics()
    if m["vkf_prefix_cache_lookups_total"] < 6 or m["vkf_prefix_cache_hit_tokens_total"] < 4 * 300 or \
            m["vkf_prefix_cache_blocks"] < 20:
        fail("metrics after the hits: %r" % {k: v for k, v in m.items() if "prefix" in k})
    # The pool holds 64 blocks, 3 chains of 25 or more are cached: a fourth prompt takes cached blocks.
    complete(server, PREAMBLE.replace("God", "the LORD"), cache_salt="tenant-c")
    m = server.metrics()
    if m["vkf_prefix_cache_evictions_total"] < 1 or m["vkf_kv_blocks_used"] != 0 or \
            m["vkf_kv_blocks_used"] + m["vkf_kv_blocks_free"] != 64:
        fail("metrics after a prompt the pool had no room for: %r" %
             {k: v for k, v in m.items() if "prefix" in k or "kv_blocks" in k})
    print("metrics: %r" % {k: v for k, v in m.items() if "prefix" in k})
    return cold


def check_no_cache(cold):
    """--no-prefix-cache, and a key window (whose sequences give their first blocks back as they
    go), keep nothing."""
    for flags, what in ((["--no-prefix-cache"], "--no-prefix-cache"), (["--window", "64"], "--window 64")):
        server = ServerProcess(command(SERVER, ["--model", KJV, "--parallel", "1", "--ctx", "512", "--port", "0"] +
                                       flags))
        try:
            complete(server, PREAMBLE)
            text, usage = complete(server, PREAMBLE + " And God said")
            if cached(usage) != 0 or (cold is not None and flags[0] == "--no-prefix-cache" and text != cold):
                fail("%s: %r cached, text %r (cold %r)" % (what, cached(usage), text, cold))
            if server.metrics()["vkf_prefix_cache_lookups_total"] != 0:
                fail("%s looked prompts up" % what)
        finally:
            server.stop()


def check_split(cold):
    server = ServerProcess(command(SERVER, ["--model", KJV, "--devices", "0,0", "--parallel", "2", "--ctx", "512",
                                            "--port", "0"]))
    try:
        complete(server, PREAMBLE)
        text, usage = complete(server, PREAMBLE + " And God said")
        expect_hit("--devices 0,0", usage, text, cold)
        _, usage = complete(server, PREAMBLE + " And God said", cache_salt="x")
        if cached(usage) != 0:
            fail("--devices 0,0, another salt: %r cached" % cached(usage))
    finally:
        server.stop()


def main():
    server = ServerProcess(command(SERVER, ["--model", KJV, "--parallel", "2", "--ctx", "512", "--ctx-blocks", "64",
                                            "--chat-format", "chatml", "--port", "0"]))
    try:
        cold = check_cache(server)
    finally:
        server.stop()
    check_no_cache(cold)
    check_split(cold)
    return finish("vkf-server prefix cache: OK")


if __name__ == "__main__":
    sys.exit(main())
