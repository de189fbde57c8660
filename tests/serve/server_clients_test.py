#!/usr/bin/env python3
"""vkf-server against what OpenAI clients send and expect (issue 43), on lavapipe with
models/kjv-bloom (given a ChatML tokenizer_config.json) and a tiny JinaBERT encoder:

- every property of OpenAI's CreateCompletionRequest and CreateChatCompletionRequest
  (tests/serve/data/openai_openapi.yaml) is in docs/SERVER.md's "Request fields" table; an
  unknown field gets a 400 naming it, ignored fields (user, metadata...) leave the greedy
  answer as it was;
- POST /tokenize and /detokenize in llama-server's shapes: ids as a completion's prompt counts
  them, pieces (bytes where a token is not UTF-8 alone), round trips, add_special with the
  encoder's [CLS]/[SEP], and bad bodies refused naming the field;
- LangChain JS (@langchain/openai) and the Vercel AI SDK (ai, @ai-sdk/openai-compatible) from
  npm (cached in NPM_DIR; skipped, and said, without node or npm) drive completions, several
  prompts, chat, and streams; greedy text equals vkf-run's; LangChain's withStructuredOutput
  (jsonSchema and functionCalling), bindTools with a forced tool (whole and streamed) and the AI
  SDK's generateObject get results that pass their schemas;
- every answer and stream chunk here and the clients' (completions, chat, embeddings, models,
  errors) validates against OpenAI's schemas for it, with zero violations.

usage: server_clients_test.py VKF_SERVER VKF_RUN VKF_MAKE_CHECKPOINT KJV_BLOOM_DIR NPM_DIR
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_checks import command, fail, finish, run  # noqa: E402
from server_process import ServerProcess  # noqa: E402
try:
    from openapi_check import AnswerCheck, OpenApi, doc_request_fields  # noqa: E402
except ImportError as e:  # python3-jsonschema or python3-yaml missing: scripts/deps.sh installs them
    print("skipped: %s (scripts/deps.sh installs python3-jsonschema and python3-yaml)" % e)
    sys.exit(77)

SERVER, RUN, MAKE, KJV, NPM_DIR = sys.argv[1:6]
HERE = os.path.dirname(os.path.abspath(__file__))
SERVER_MD = os.path.join(HERE, "..", "..", "docs", "SERVER.md")
PACKAGES = [("@langchain/core", "1.2.13"), ("@langchain/openai", "1.6.0"),
            ("ai", "7.0.173"), ("@ai-sdk/openai-compatible", "3.0.92"), ("zod", "4.6.7")]
CHATML_TEMPLATE = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
                   "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
                   "{% endif %}")
PROMPTS = ["In the beginning God", "Blessed are"]
SYSTEM = "Answer in the words of the King James Bible."
QUESTION = "Who made the heaven and the earth?"
MAX_TOKENS = 16


class Server(ServerProcess):
    def __init__(self, args):
        super().__init__(command(SERVER, args + ["--port", "0"]))
        self.answers = None  # an AnswerCheck: every answer of request() is validated

    def request(self, method, path, body=None, headers=None, timeout=300):
        status, got_headers, text = super().request(method, path, body, headers, timeout)
        if self.answers is not None:
            self.answers.answer("%s %s %s" % (method, path, json.dumps(body)[:120] if body else ""), path, status,
                                got_headers.get("Content-Type"), text)
        return status, got_headers, text


def vkf_run(prompt, stop=None):
    """vkf-run's greedy text and token count for `prompt` (kjv-bloom, MAX_TOKENS)."""
    args = ["--model", KJV, "--prompt", prompt, "--n-predict", str(MAX_TOKENS), "--json", "--quiet"]
    proc = run(RUN, args + (["--stop", stop] if stop else []))
    if proc.returncode != 0:
        fail("vkf-run failed: " + proc.stderr)
        return None, 0
    result = json.loads(proc.stdout)
    return result["text"], len(result["generated_ids"])


def chatml(system, question):
    """The prompt vkf-server renders for [system, user] in ChatML (host/text/chat_format.cpp)."""
    return "<|im_start|>system\n%s\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n" % (system.strip(), question)


def expect_400(what, status, body, param, mentions):
    error = body.get("error", {}) if isinstance(body, dict) else {}
    if status != 400 or error.get("param") != param or mentions not in error.get("message", ""):
        fail("%s: want 400 naming %s (%r), got %s %r" % (what, param, mentions, status, body))


def check_request_fields(api, server):
    documented = doc_request_fields(SERVER_MD)
    for schema, endpoint in (("CreateCompletionRequest", "completions"), ("CreateChatCompletionRequest", "chat")):
        missing = sorted(api.properties(schema) - documented[endpoint])
        if missing:
            fail("%s's fields missing from docs/SERVER.md's %s rows: %s" % (schema, endpoint, missing))
    status, body = server.post("/v1/completions", {"prompt": PROMPTS[0], "max_tokens": 2, "temprature": 0})
    expect_400("an unknown field", status, body, "temprature", "temprature")
    status, body = server.post("/v1/completions", {"prompt": PROMPTS[0], "max_completion_tokens": 2})
    expect_400("a chat field in a completion", status, body, "max_completion_tokens", "chat")
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
    status, body = server.post("/v1/chat/completions", {"messages": messages, "audio": {"voice": "alloy"}})
    expect_400("audio", status, body, "audio", "not supported")
    plain = {"messages": messages, "max_tokens": MAX_TOKENS, "temperature": 0}
    ignored = dict(plain, user="u", metadata={"k": "v"}, store=True, service_tier="auto", safety_identifier="s",
                   prompt_cache_key="k", parallel_tool_calls=True, modalities=["text"])
    answers = [server.post("/v1/chat/completions", b) for b in (plain, ignored)]
    texts = [b["choices"][0]["message"]["content"] if s == 200 else (s, b) for s, b in answers]
    if texts[0] != texts[1]:
        fail("ignored fields changed the answer: %r" % texts)
    return texts[0]


def check_tokenize(server, encoder_server):
    status, body = server.post("/tokenize", {"content": PROMPTS[0]})
    _, completion = server.post("/v1/completions", {"prompt": PROMPTS[0], "max_tokens": 1})
    ids = body.get("tokens") if status == 200 else None
    if not ids or len(ids) != completion["usage"]["prompt_tokens"] or not all(isinstance(i, int) for i in ids):
        fail("/tokenize %r: %s %r (the completion's prompt_tokens: %r)" % (PROMPTS[0], status, body, completion))
        return
    status, body = server.post("/detokenize", {"tokens": ids})
    if status != 200 or body != {"content": PROMPTS[0]}:
        fail("/detokenize %r: %s %r" % (ids, status, body))
    status, body = server.post("/tokenize", {"content": PROMPTS[0] + " \u00e9", "with_pieces": True})
    pieces = body.get("tokens", []) if status == 200 else []
    if [p["id"] for p in pieces[:len(ids)]] != ids:
        fail("with_pieces ids: %r, without: %r" % (pieces, ids))
    joined = b"".join(bytes(p["piece"]) if isinstance(p["piece"], list) else p["piece"].encode() for p in pieces)
    if joined != (PROMPTS[0] + " \u00e9").encode() or not any(isinstance(p["piece"], list) for p in pieces):
        fail("pieces (kjv-bloom splits \u00e9 into two byte tokens): %r" % pieces)
    status, body = server.post("/detokenize", {"tokens": []})
    if status != 200 or body != {"content": ""}:
        fail("/detokenize of no tokens: %s %r" % (status, body))
    # The encoder's WordPiece tokenizer adds [CLS] and [SEP] only when asked.
    plain = encoder_server.post("/tokenize", {"content": "hello world"})[1].get("tokens", [])
    special = encoder_server.post("/tokenize", {"content": "hello world", "add_special": True})[1].get("tokens", [])
    if len(special) != len(plain) + 2 or special[1:-1] != plain:
        fail("add_special: %r, without: %r" % (special, plain))
    for route, body, param, mentions in [
            ("/tokenize", {}, "content", "content is missing"),
            ("/tokenize", {"content": 7}, "content", "must be a string"),
            ("/tokenize", {"content": "x", "with_pieces": "yes"}, "with_pieces", "true or false"),
            ("/tokenize", {"content": "x", "parse_special": False}, "parse_special", "not supported"),
            ("/tokenize", {"content": "x", "text": "y"}, "text", "not a field of /tokenize"),
            ("/detokenize", {}, "tokens", "tokens is missing"),
            ("/detokenize", {"tokens": "12"}, "tokens", "an array of token ids"),
            ("/detokenize", {"tokens": [1, -2]}, "tokens[1]", "between 0"),
            ("/detokenize", {"tokens": [1, 2.5]}, "tokens[1]", "integer"),
            ("/detokenize", {"tokens": [1, 4096]}, "tokens", "outside the vocabulary of 4096")]:
        status, got = server.post(route, body)
        expect_400("%s %s" % (route, json.dumps(body)), status, got, param, mentions)


def shapes(server):
    """One request of each kind OpenAI's schemas describe (server.answers validates them)."""
    messages = [{"role": "user", "content": QUESTION}]
    for path, body in [
            ("/v1/completions", {"prompt": PROMPTS[0], "max_tokens": 4}),
            ("/v1/completions", {"prompt": PROMPTS, "max_tokens": 4, "n": 2, "logprobs": 2}),
            ("/v1/completions", {"prompt": PROMPTS[0], "max_tokens": 4, "logprobs": 1, "echo": True}),
            ("/v1/completions", {"prompt": PROMPTS[0], "max_tokens": 4, "stream": True, "logprobs": 2,
                                 "stream_options": {"include_usage": True}}),
            ("/v1/chat/completions", {"messages": messages, "max_tokens": 4}),
            ("/v1/chat/completions", {"messages": messages, "max_tokens": 4, "n": 2, "logprobs": True,
                                      "top_logprobs": 3}),
            ("/v1/chat/completions", {"messages": messages, "max_tokens": 4, "stream": True, "logprobs": True,
                                      "top_logprobs": 2, "stream_options": {"include_usage": True}}),
            ("/v1/chat/completions", {"messages": messages, "max_tokens": 4, "stop": ["the"], "stream": True}),
            ("/v1/embeddings", {"model": "enc", "input": ["hello world", "the quick brown fox"]}),
            ("/v1/embeddings", {"model": "enc", "input": "hello", "encoding_format": "base64"}),
            ("/v1/completions", {"prompt": PROMPTS[0], "max_tokens": 0}),
            ("/v1/chat/completions", {"messages": []})]:
        server.request("POST", path, body)
    server.request("GET", "/v1/models")
    server.request("GET", "/v1/models/chat-kjv")
    server.request("GET", "/v1/models/no-such-model")


def check_clients(server, case):
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            print("client checks skipped: %s is not installed (scripts/deps.sh installs Node.js and npm)" % tool)
            return
    wanted = []
    for name, version in PACKAGES:
        manifest = os.path.join(NPM_DIR, "node_modules", name, "package.json")
        if not (os.path.exists(manifest) and json.load(open(manifest, encoding="utf-8"))["version"] == version):
            wanted.append("%s@%s" % (name, version))
    if wanted:
        os.makedirs(NPM_DIR, exist_ok=True)
        proc = subprocess.run(["npm", "install", "--prefix", NPM_DIR, "--no-audit", "--no-fund", "--loglevel=error"]
                              + wanted, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            print("client checks skipped: npm could not install %s (registry unreachable?):\n%s" %
                  (" ".join(wanted), proc.stderr.strip()[-1000:]))
            return
    with tempfile.TemporaryDirectory() as tmp:
        capture = os.path.join(tmp, "answers.json")
        proc = subprocess.run(["node", os.path.join(HERE, "server_clients_test.mjs"), NPM_DIR, server.base + "/v1",
                               json.dumps(case), capture], capture_output=True, text=True, timeout=600)
        print(proc.stdout.strip())
        if proc.returncode != 0:
            fail("the LangChain / AI SDK checks failed: %s %s" % (proc.stdout, proc.stderr[-3000:]))
        answers = json.load(open(capture, encoding="utf-8")) if os.path.exists(capture) else []
    for i, a in enumerate(answers):
        server.answers.answer("client answer %d (%s %s)" % (i, a["url"], (a["request"] or "")[:160]), a["url"],
                              a["status"], a["content_type"], a["body"])


def main():
    api = OpenApi()
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

        completions = [vkf_run(p)[0] for p in PROMPTS]
        chat, chat_tokens = vkf_run(chatml(SYSTEM, QUESTION), stop="<|im_end|>")
        ai_sdk_completion = vkf_run("user:\n%s\n\nassistant:\n" % PROMPTS[0], stop="\nuser:")[0]
        server = Server(["--model", chat_model, "--embedding-model", encoder, "--parallel", "4", "--queue", "8",
                         "--ctx", "1024"])
        encoder_server = Server(["--model", encoder, "--quiet"])
        try:
            server.answers = AnswerCheck(api)
            served_chat = check_request_fields(api, server)
            if served_chat != chat:
                fail("the server's greedy chat answer %r, vkf-run's on the rendered prompt %r" % (served_chat, chat))
            check_tokenize(server, encoder_server)
            shapes(server)
            check_clients(server, {"model": "chat-kjv", "system": SYSTEM, "question": QUESTION, "prompts": PROMPTS,
                                   "completions": completions, "chat": chat, "chat_tokens": chat_tokens,
                                   "ai_sdk_completion": ai_sdk_completion, "max_tokens": MAX_TOKENS})
            print("OpenAPI: %d answers and chunks checked, %d violations (%d values in the description's "
                  "known gaps, openapi_check.SPEC_GAPS)" %
                  (server.answers.checked, len(server.answers.violations), server.answers.gaps))
            for v in server.answers.violations[:60]:
                fail(v)
        finally:
            server.stop()
            encoder_server.stop()
    return finish("vkf-server with OpenAI's clients and schemas: OK")


if __name__ == "__main__":
    sys.exit(main())
