"""OpenAI response shapes that real clients need (server_test.py runs it): every chat message
carries `refusal` (null), a completion request takes several prompts (LangChain's
generate([a, b])) with choice p * n + j for choice j of prompt p, and GET /v1/models/{id}
answers for a served model and 404s with model_not_found for another."""

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
