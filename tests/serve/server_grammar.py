#!/usr/bin/env python3
"""Constrained output through vkf-server with models/kjv-bloom (its text is junk, but the
grammar makes it valid junk): llama-server's `grammar` and `json_schema` fields and OpenAI's
`response_format` (json_object, json_schema) on completions and chat, streamed and not; every
answer ends by the grammar ("stop") within max_tokens and parses and validates against its
schema (python3-jsonschema); a schema keyword outside the subset is a 400 naming it. The same
through vkf-run's --grammar and --json-schema (a bad schema refused before loading). Exit 77
(skipped) without python3-jsonschema.

usage: server_grammar.py VKF_SERVER VKF_RUN KJV_BLOOM_DIR
"""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_checks import command, fail, finish, run  # noqa: E402
from server_process import ServerProcess  # noqa: E402

try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is not installed (scripts/deps.sh installs it): skipped")
    sys.exit(77)

SERVER, RUN, KJV = sys.argv[1:4]
CHATML_TEMPLATE = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
                   "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
                   "{% endif %}")
SCHEMA = {"type": "object",
          "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer"},
                         "tags": {"type": "array", "items": {"enum": ["law", "grace", "truth"]}, "maxItems": 3},
                         "ok": {"type": "boolean"}, "note": {"type": ["string", "null"], "maxLength": 6}},
          "required": ["name", "age", "ok"], "additionalProperties": False}
PROMPT = "And the LORD said unto Moses"
CHAT = [{"role": "user", "content": "Who was Moses? Answer in JSON."}]


def stream_text(server, path, body):
    """The streamed deltas joined, and the last finish_reason."""
    status, _, raw = server.request("POST", path, dict(body, stream=True))
    if status != 200:
        fail("streamed %s: %s %s" % (path, status, raw))
        return "", None
    text, finish_reason = "", None
    for event in raw.split("\n\n"):
        if not event.startswith("data: ") or event == "data: [DONE]":
            continue
        for choice in json.loads(event[len("data: "):]).get("choices", []):
            text += choice.get("text") or (choice.get("delta") or {}).get("content") or ""
            finish_reason = choice.get("finish_reason") or finish_reason
    return text, finish_reason


def check_valid(what, text, finish_reason, schema):
    if finish_reason != "stop":
        fail("%s: ended by %r, not by the grammar: %r" % (what, finish_reason, text))
        return
    try:
        jsonschema.Draft202012Validator(schema).validate(json.loads(text))
    except (ValueError, jsonschema.ValidationError) as e:
        fail("%s: %r does not validate: %s" % (what, text, str(e).splitlines()[0]))


def check_grammar_field(server):
    seen = set()
    for seed in range(4):
        status, body = server.post("/v1/completions", {"prompt": PROMPT, "max_tokens": 8, "temperature": 1.0,
                                                       "seed": seed, "grammar": 'root ::= ("yes" | "no") "."'})
        if status != 200:
            fail("grammar: %s %r" % (status, body))
            continue
        choice = body["choices"][0]
        if choice["text"] not in ("yes.", "no.") or choice["finish_reason"] != "stop":
            fail("grammar: %r ended by %r" % (choice["text"], choice["finish_reason"]))
        seen.add(choice["text"])
    print("grammar yes/no: %s" % sorted(seen))


def check_json_schema(server):
    status, body = server.post("/v1/completions", {"prompt": PROMPT, "max_tokens": 200, "temperature": 1.0,
                                                   "seed": 7, "n": 2, "json_schema": SCHEMA})
    if status != 200:
        fail("json_schema: %s %r" % (status, body))
        return
    for choice in body["choices"]:
        check_valid("completions json_schema", choice["text"], choice["finish_reason"], SCHEMA)
        print("completions json_schema: %s" % choice["text"])
    response_format = {"type": "json_schema", "json_schema": {"name": "person", "strict": True, "schema": SCHEMA}}
    status, body = server.post("/v1/chat/completions", {"messages": CHAT, "max_tokens": 200, "temperature": 0,
                                                        "response_format": response_format})
    if status != 200:
        fail("chat response_format json_schema: %s %r" % (status, body))
    else:
        choice = body["choices"][0]
        check_valid("chat json_schema", choice["message"]["content"], choice["finish_reason"], SCHEMA)
        streamed, finish_reason = stream_text(server, "/v1/chat/completions",
                                              {"messages": CHAT, "max_tokens": 200, "temperature": 0,
                                               "response_format": response_format})
        if streamed != choice["message"]["content"]:
            fail("chat json_schema streamed %r, not streamed %r" % (streamed, choice["message"]["content"]))
        check_valid("chat json_schema streamed", streamed, finish_reason, SCHEMA)
        print("chat json_schema: %s" % streamed)


def check_json_object(server):
    text, finish_reason = stream_text(server, "/v1/completions",
                                      {"prompt": PROMPT, "max_tokens": 300, "temperature": 0.7, "seed": 3,
                                       "response_format": {"type": "json_object"}})
    if not text.startswith("{"):
        fail("json_object: %r does not start an object" % text)
    if finish_reason == "stop":
        check_valid("json_object", text, finish_reason, {"type": "object"})
    print("json_object (%s): %s" % (finish_reason, text[:200]))


def check_refusals(server):
    bad = {"type": "object", "properties": {"mail": {"type": "string", "format": "email"}}}
    status, body = server.post("/v1/chat/completions", {"messages": CHAT, "response_format": {
        "type": "json_schema", "json_schema": {"name": "x", "schema": bad}}})
    error = body.get("error", {}) if isinstance(body, dict) else {}
    if status != 400 or error.get("param") != "response_format.json_schema.schema" or \
            "'format'" not in error.get("message", ""):
        fail("an unsupported keyword: %s %r" % (status, body))
    status, body = server.post("/v1/completions", {"prompt": PROMPT, "grammar": 'root ::= "a'})
    if status != 400 or body.get("error", {}).get("param") != "grammar":
        fail("a bad grammar: %s %r" % (status, body))


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
                                                    "unit": {"enum": ["celsius", "fahrenheit"]}},
                   "required": ["city"]}}},
         {"type": "function", "function": {
             "name": "count", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}},
                                             "required": ["n"], "additionalProperties": False}}}]


def check_call(what, call, name):
    """A tool call object of OpenAI's shape naming `name`, its arguments valid for the function."""
    params = next(t["function"]["parameters"] for t in TOOLS if t["function"]["name"] == name)
    if not call.get("id", "").startswith("call_") or call.get("type") != "function" or \
            call.get("function", {}).get("name") != name:
        fail("%s: %r is not a call of %s" % (what, call, name))
        return
    try:
        jsonschema.Draft202012Validator(params).validate(json.loads(call["function"]["arguments"]))
    except (ValueError, jsonschema.ValidationError) as e:
        fail("%s: arguments %r: %s" % (what, call["function"]["arguments"], str(e).splitlines()[0]))


def check_tools(server):
    body = {"messages": CHAT, "max_tokens": 200, "temperature": 0.8, "seed": 11, "tools": TOOLS,
            "tool_choice": "required"}
    status, answer = server.post("/v1/chat/completions", body)
    if status != 200:
        fail("tools required: %s %r" % (status, answer))
        return
    choice = answer["choices"][0]
    calls = choice["message"].get("tool_calls") or []
    if choice["finish_reason"] != "tool_calls" or choice["message"]["content"] is not None or len(calls) != 1:
        fail("tools required: %r" % choice)
    else:
        check_call("tools required", calls[0], calls[0]["function"]["name"])
        print("tool call (required): %s" % calls[0]["function"])
    named = dict(body, tool_choice={"type": "function", "function": {"name": "count"}})
    status, answer = server.post("/v1/chat/completions", named)
    calls = answer["choices"][0]["message"].get("tool_calls") or [{}] if status == 200 else [{}]
    check_call("tools named", calls[0], "count")
    # Streamed: the call comes as one tool_calls delta, then finish_reason tool_calls.
    status, _, raw = server.request("POST", "/v1/chat/completions", dict(named, stream=True))
    deltas = [json.loads(e[len("data: "):]) for e in raw.split("\n\n") if e.startswith("data: {")]
    streamed = [c for d in deltas for ch in d["choices"] for c in ch["delta"].get("tool_calls", [])]
    finishes = [ch["finish_reason"] for d in deltas for ch in d["choices"] if ch["finish_reason"]]
    if status != 200 or len(streamed) != 1 or streamed[0].get("index") != 0 or finishes != ["tool_calls"]:
        fail("tools streamed: %s %r" % (status, raw[:600]))
    else:
        check_call("tools streamed", streamed[0], "count")
        if streamed[0]["function"]["arguments"] != calls[0].get("function", {}).get("arguments"):
            fail("tools streamed %r, not streamed %r" % (streamed[0], calls[0]))
    # none: text; a history with a call and its result is taken.
    history = CHAT + [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "count", "arguments": "{\"n\": 3}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "3"}]
    status, answer = server.post("/v1/chat/completions", {"messages": history, "max_tokens": 6, "temperature": 0,
                                                          "tools": TOOLS, "tool_choice": "none"})
    if status != 200 or answer["choices"][0]["message"].get("tool_calls") or \
            not isinstance(answer["choices"][0]["message"]["content"], str):
        fail("tools none with a tool history: %s %r" % (status, answer))
    status, answer = server.post("/v1/chat/completions", dict(body, tool_choice={"type": "function",
                                                                                 "function": {"name": "nope"}}))
    if status != 400 or answer.get("error", {}).get("param") != "tool_choice.function.name":
        fail("an unknown tool_choice: %s %r" % (status, answer))
    status, answer = server.post("/v1/completions", {"prompt": PROMPT, "tools": TOOLS})
    if status != 400 or answer.get("error", {}).get("param") != "tools":
        fail("tools in a completion: %s %r" % (status, answer))


def check_vkf_run(tmp):
    gbnf, schema, bad = (os.path.join(tmp, n) for n in ("yes.gbnf", "schema.json", "bad.json"))
    with open(gbnf, "w", encoding="utf-8") as f:
        f.write('root ::= ("yes" | "no") "."\n')
    with open(schema, "w", encoding="utf-8") as f:
        json.dump(SCHEMA, f)
    with open(bad, "w", encoding="utf-8") as f:
        json.dump({"type": "string", "pattern": "^a"}, f)
    base = ["--model", KJV, "--prompt", PROMPT, "--json", "--quiet"]
    proc = run(RUN, base + ["--n-predict", "8", "--grammar", gbnf, "--temp", "1", "--seed", "5"])
    if proc.returncode != 0 or json.loads(proc.stdout)["text"] not in ("yes.", "no."):
        fail("vkf-run --grammar: %d %s %s" % (proc.returncode, proc.stdout, proc.stderr))
    proc = run(RUN, base + ["--n-predict", "200", "--json-schema", schema])
    if proc.returncode != 0:
        fail("vkf-run --json-schema: %s" % proc.stderr)
    else:
        check_valid("vkf-run --json-schema", json.loads(proc.stdout)["text"], "stop", SCHEMA)
    proc = run(RUN, base + ["--json-schema", bad])
    if proc.returncode == 0 or "'pattern' is not supported" not in proc.stderr or "loading" in proc.stderr:
        fail("vkf-run with an unsupported keyword: %d %s" % (proc.returncode, proc.stderr))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        chat_model = os.path.join(tmp, "chat-kjv")
        os.makedirs(chat_model)
        for name in ("config.json", "model.safetensors", "tokenizer.json"):
            os.symlink(os.path.join(os.path.abspath(KJV), name), os.path.join(chat_model, name))
        with open(os.path.join(chat_model, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump({"chat_template": CHATML_TEMPLATE, "eos_token": "<|endoftext|>"}, f)
        server = ServerProcess(command(SERVER, ["--model", chat_model, "--parallel", "4", "--ctx", "1024",
                                                "--port", "0", "--quiet"]))
        try:
            check_grammar_field(server)
            check_json_schema(server)
            check_json_object(server)
            check_refusals(server)
            check_tools(server)
        finally:
            server.stop()
        check_vkf_run(tmp)
    return finish("vkf-server constrained output: OK")


if __name__ == "__main__":
    sys.exit(main())
