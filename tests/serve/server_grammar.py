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
        server = ServerProcess(command(SERVER, ["--model", chat_model, "--parallel", "4", "--ctx", "512",
                                                "--port", "0", "--quiet"]))
        try:
            check_grammar_field(server)
            check_json_schema(server)
            check_json_object(server)
            check_refusals(server)
        finally:
            server.stop()
        check_vkf_run(tmp)
    return finish("vkf-server constrained output: OK")


if __name__ == "__main__":
    sys.exit(main())
