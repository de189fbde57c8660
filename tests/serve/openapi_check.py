"""OpenAI's published OpenAPI description (tests/serve/data/openai_openapi.yaml, cut from the
openai-openapi repository) as JSON-schema validators (Debian's python3-jsonschema): every
answer and stream chunk vkf-server's client tests see is checked against the schema OpenAI
gives for it, and the request schemas' fields against docs/SERVER.md's "Request fields"."""

import json
import os
import re

import yaml
from jsonschema import Draft202012Validator

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = os.path.join(HERE, "data", "openai_openapi.yaml")


def _nullable(node):
    """OpenAPI 3.0's `nullable: true`, which some of the 3.1 document's schemas still use, as
    JSON Schema says it: null added to the types (and to an enum)."""
    if isinstance(node, list):
        return [_nullable(x) for x in node]
    if not isinstance(node, dict):
        return node
    node = {k: _nullable(v) for k, v in node.items()}
    if node.pop("nullable", False):
        if "enum" in node and None not in node["enum"]:
            node["enum"] = node["enum"] + [None]
        kind = node.get("type")
        if isinstance(kind, str):
            node["type"] = [kind, "null"]
        elif isinstance(kind, list):
            node["type"] = kind + ["null"]
        else:
            node = {"anyOf": [node, {"type": "null"}]}
    return node


# Where OpenAI's description is narrower than OpenAI's own API, which vkf-server follows: each
# gap allows one kind of value at one place, nothing else. (schema, path, streamed only, the
# value's type, why)
SPEC_GAPS = [
    ("CreateCompletionResponse", r"choices/\d+/finish_reason", True, type(None),
     "a completion stream's chunks before the last have finish_reason null, as OpenAI's stream does; the "
     "description reuses the whole answer's schema for them"),
    ("CreateCompletionResponse", r"choices/\d+/logprobs/(token_logprobs|top_logprobs)/0", False, type(None),
     "echo: the prompt's first token has no logprob (null), as OpenAI answers"),
    ("CreateEmbeddingResponse", r"data/\d+/embedding", False, str,
     "encoding_format base64 (CreateEmbeddingRequest offers it): the vector as a base64 string"),
]


def _path(error):
    return "/".join(str(p) for p in error.absolute_path)


def _in_gap(name, error, streamed):
    """Whether `error` is one of SPEC_GAPS (for anyOf: whether some branch fails only by them)."""
    if error.validator in ("anyOf", "oneOf") and error.context:
        branches = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        return any(all(_in_gap(name, sub, streamed) for sub in subs) for subs in branches.values())
    return any(schema == name and re.fullmatch(path, _path(error)) and (streamed or not stream_only) and
               isinstance(error.instance, kind) for schema, path, stream_only, kind, _ in SPEC_GAPS)


class OpenApi:
    def __init__(self):
        with open(SPEC, encoding="utf-8") as f:
            self.schemas = _nullable(yaml.safe_load(f)["components"]["schemas"])
        self.validators = {}

    def violations(self, name, value, streamed=False):
        """What is wrong with `value` as the schema `name`, one line each (empty when valid), and
        how many of SPEC_GAPS' values it holds."""
        if name not in self.validators:
            self.validators[name] = Draft202012Validator(
                {"$ref": "#/components/schemas/" + name, "components": {"schemas": self.schemas}})
        errors = list(self.validators[name].iter_errors(value))
        wrong = [e for e in errors if not _in_gap(name, e, streamed)]
        return ["%s at %s: %s" % (name, _path(e) or "(top)", e.message[:300]) for e in wrong], len(errors) - len(wrong)

    def properties(self, name):
        """The property names of a request schema, through its allOf and $refs."""
        schema, names = self.schemas[name], set()
        for part in schema.get("allOf", [schema]):
            if "$ref" in part:
                names |= self.properties(part["$ref"].rsplit("/", 1)[1])
            names |= set(part.get("properties", {}))
        return names


def sse_events(text):
    """The JSON objects of a server-sent event stream (comments and [DONE] left out)."""
    events = []
    for event in text.split("\n\n"):
        data = [line[len("data: "):] for line in event.split("\n") if line.startswith("data: ")]
        if data and data[0] != "[DONE]":
            events.append(json.loads("\n".join(data)))
    return events


def schema_for(path, status, streamed):
    """OpenAI's schema of an answer of `path` (None for routes OpenAI does not have)."""
    path = path.split("?")[0]
    if status != 200 and re.search(r"/(tokenize|detokenize)$", path):
        return "ErrorResponse"  # llama-server's routes, vkf-server's error objects
    if "/v1/" not in path:
        return None  # /health, /metrics, the page, and /tokenize's answers: not OpenAI's
    if status != 200:
        return "ErrorResponse"
    if path.endswith("/v1/completions"):
        return "CreateCompletionResponse"  # its stream chunks too
    if path.endswith("/v1/chat/completions"):
        return "CreateChatCompletionStreamResponse" if streamed else "CreateChatCompletionResponse"
    if path.endswith("/v1/embeddings"):
        return "CreateEmbeddingResponse"
    if path.endswith("/v1/models"):
        return "ListModelsResponse"
    if re.search(r"/v1/models/.+", path):
        return "Model"
    return None


class AnswerCheck:
    """Validates answers as they come; `violations` and `checked` count them."""

    def __init__(self, api):
        self.api = api
        self.violations = []
        self.checked = 0
        self.gaps = 0  # errors of the description's own that SPEC_GAPS allows

    def answer(self, what, path, status, content_type, body):
        streamed = (content_type or "").startswith("text/event-stream")
        name = schema_for(path, status, streamed)
        if name is None:
            return
        for i, value in enumerate(sse_events(body) if streamed else [json.loads(body)]):
            # A stream that fails ends with an error object as its last event.
            schema = "ErrorResponse" if streamed and "error" in value else name
            self.checked += 1
            wrong, gaps = self.api.violations(schema, value, streamed)
            self.gaps += gaps
            self.violations += ["%s%s: %s" % (what, " chunk %d" % i if streamed else "", v) for v in wrong]


def doc_request_fields(server_md):
    """docs/SERVER.md's "Request fields" table: {"completions": names, "chat": names}."""
    with open(server_md, encoding="utf-8") as f:
        text = f.read()
    start = text.index("\n## Request fields\n")
    section = text[start:text.index("\n## ", start + 1)]
    fields = {"completions": set(), "chat": set()}
    table = section[section.index("| field |"):section.index("\n\n", section.index("| field |"))]
    for name, endpoint in re.findall(r"^\| `([a-z_]+)` \| (both|completions|chat) \|", table, re.M):
        for e in ("completions", "chat") if endpoint == "both" else (endpoint,):
            fields[e].add(name)
    return fields
