"""OpenAI response shapes that real clients need (server_test.py runs it): every chat message
carries `refusal` (null), a completion request takes several prompts (LangChain's
generate([a, b])) with choice p * n + j for choice j of prompt p, and GET /v1/models/{id}
answers for a served model and 404s with model_not_found for another."""

import http.client
import json

from cli_checks import fail
from server_checks import expect_error

PROMPTS = ["In the beginning God", "Blessed are"]


def greedy(server, prompt, max_tokens):
    status, body = server.post("/v1/completions", {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0})
    if status != 200:
        fail("completion of %r: %s %r" % (prompt, status, body))
        return None, 0
    return body["choices"][0]["text"], body["usage"]["prompt_tokens"]


def check_response_shapes(server):
    status, body = server.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}],
                                                        "max_tokens": 2})
    if status != 200 or "refusal" not in body["choices"][0]["message"] or \
            body["choices"][0]["message"]["refusal"] is not None:
        fail("chat message without refusal: null: %s %r" % (status, body))

    alone = [greedy(server, p, 6) for p in PROMPTS]
    status, body = server.post("/v1/completions", {"prompt": PROMPTS, "max_tokens": 6, "temperature": 0, "n": 2})
    if status != 200 or sorted(c["index"] for c in body.get("choices", [])) != [0, 1, 2, 3]:
        fail("two prompts, n=2: %s %r" % (status, body))
    else:
        texts = {c["index"]: c["text"] for c in body["choices"]}
        want = {0: alone[0][0], 1: alone[0][0], 2: alone[1][0], 3: alone[1][0]}
        if texts != want:
            fail("two prompts, n=2: choices %r, each prompt alone %r" % (texts, want))
        if body["usage"]["prompt_tokens"] != alone[0][1] + alone[1][1]:
            fail("two prompts: prompt_tokens %r, alone %r" % (body["usage"], alone))
    status, body = server.post("/v1/completions", {"prompt": PROMPTS, "max_tokens": 2, "stream": True})
    expect_error("two prompts streamed", status, body, 400, param="prompt", mentions="several prompts")

    status, _, text = server.request("GET", "/v1/models")
    name = json.loads(text)["data"][0]["id"] if status == 200 else None
    status, _, text = server.request("GET", "/v1/models/%s" % name)
    if status != 200 or json.loads(text) != {"id": name, "object": "model", "created": 0, "owned_by": "vkformer"}:
        fail("GET /v1/models/%s: %s %s" % (name, status, text))
    status, _, text = server.request("GET", "/v1/models/no-such-model")
    expect_error("GET /v1/models/no-such-model", status, json.loads(text), 404, param="model",
                 mentions="no-such-model")


def chat_stream(server, body):
    """The JSON chunks of a streamed chat request, and whether [DONE] ended it."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=300)
    conn.request("POST", "/v1/chat/completions", body=json.dumps(dict(body, stream=True)),
                 headers={"Content-Type": "application/json"})
    raw = conn.getresponse().read().decode("utf-8")
    conn.close()
    events = [e for e in raw.split("\n\n") if e.startswith("data: ")]
    done = bool(events) and events[-1] == "data: [DONE]"
    return [json.loads(e[len("data: "):]) for e in events if e != "data: [DONE]"], done


def check_logprobs(server):
    """Logprobs in OpenAI's shapes: one entry per generated token, greedy's token the most likely
    of its top, the same values streamed and whole."""
    status, body = server.post("/v1/completions", {"prompt": PROMPTS[0], "max_tokens": 5, "temperature": 0,
                                                   "logprobs": 3})
    if status != 200:
        fail("completion logprobs: %s %r" % (status, body))
        return
    lp = body["choices"][0]["logprobs"]
    n = body["usage"]["completion_tokens"]
    if sorted(lp) != ["text_offset", "token_logprobs", "tokens", "top_logprobs"] or \
            not len(lp["tokens"]) == len(lp["token_logprobs"]) == len(lp["top_logprobs"]) == n or \
            any(len(top) > 3 or x > 1e-9 or abs(x - max(top.values())) > 1e-9
                for x, top in zip(lp["token_logprobs"], lp["top_logprobs"])) or \
            lp["text_offset"][0] != 0 or "".join(lp["tokens"]) != body["choices"][0]["text"]:
        fail("completion logprobs: %r" % body)
    chat = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, "temperature": 0, "logprobs": True,
            "top_logprobs": 2}
    status, body = server.post("/v1/chat/completions", chat)
    content = body["choices"][0]["logprobs"]["content"] if status == 200 else None
    if content is None or len(content) != body["usage"]["completion_tokens"] or \
            body["choices"][0]["logprobs"]["refusal"] is not None or \
            any(sorted(c) != ["bytes", "logprob", "token", "top_logprobs"] or len(c["top_logprobs"]) != 2 or
                abs(c["logprob"] - c["top_logprobs"][0]["logprob"]) > 1e-9 for c in content):
        fail("chat logprobs: %s %r" % (status, body))
        return
    chunks, done = chat_stream(server, chat)
    streamed = [c for chunk in chunks for choice in chunk["choices"] if choice.get("logprobs")
                for c in choice["logprobs"]["content"]]
    # The second request may take the first one's prompt blocks from the prefix cache: its rows
    # then ran in other chunks, which moves logprobs by float32 rounding (4e-7 seen), not more.
    if not done or [c["token"] for c in streamed] != [c["token"] for c in content] or \
            any(abs(a["logprob"] - b["logprob"]) > 1e-5 for a, b in zip(streamed, content)):
        fail("chat logprobs streamed %r, whole %r" % (streamed, content))


def completion_stream(server, body):
    """The JSON chunks of a streamed completion (through server.request: the OpenAPI check sees
    them), and whether [DONE] ended it."""
    status, _, raw = server.request("POST", "/v1/completions", dict(body, stream=True))
    events = [e for e in raw.split("\n\n") if e.startswith("data: ")]
    done = status == 200 and bool(events) and events[-1] == "data: [DONE]"
    return [json.loads(e[len("data: "):]) for e in events if e != "data: [DONE]"], done


def check_streamed_echo(server, request, whole):
    """A streamed echo: the prompt's text first, then the generated; the texts and (with
    logprobs) the entries joined equal the whole answer's."""
    chunks, done = completion_stream(server, request)
    choices = [c for chunk in chunks for c in chunk["choices"]]
    text = "".join(c["text"] for c in choices)
    if not done or not choices or choices[0]["text"] != request["prompt"] or text != whole["text"]:
        fail("echo streamed: %r, whole %r" % (chunks, whole))
        return
    if whole["logprobs"] is None:
        return
    joined = {key: [x for c in choices if c["logprobs"] for x in c["logprobs"][key]] for key in whole["logprobs"]}
    if joined != whole["logprobs"]:
        fail("echo with logprobs streamed %r, whole %r" % (joined, whole["logprobs"]))


def check_echo(server):
    """echo: the prompt's text before the completion's, and with logprobs its tokens first (the
    first one without a logprob, as OpenAI's); streamed, the same text and entries."""
    request = {"prompt": PROMPTS[0], "max_tokens": 4, "temperature": 0, "echo": True}
    status, body = server.post("/v1/completions", request)
    if status != 200 or not body["choices"][0]["text"].startswith(PROMPTS[0]):
        fail("echo: %s %r" % (status, body))
    status, body = server.post("/v1/completions", dict(request, logprobs=2))
    if status != 200:
        fail("echo with logprobs: %s %r" % (status, body))
        return
    lp = body["choices"][0]["logprobs"]
    usage = body["usage"]
    if len(lp["tokens"]) != usage["prompt_tokens"] + usage["completion_tokens"] or \
            lp["token_logprobs"][0] is not None or lp["top_logprobs"][0] is not None or \
            any(x is None or x > 1e-9 for x in lp["token_logprobs"][1:]) or \
            "".join(lp["tokens"]) != body["choices"][0]["text"] or \
            lp["text_offset"][usage["prompt_tokens"]] != len(PROMPTS[0]):
        fail("echo with logprobs: %r" % body)
    status, whole = server.post("/v1/completions", request)
    if status == 200:
        check_streamed_echo(server, request, whole["choices"][0])
    check_streamed_echo(server, dict(request, logprobs=2), body["choices"][0])
