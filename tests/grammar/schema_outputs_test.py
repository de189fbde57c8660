#!/usr/bin/env python3
"""200 seeded random JSON schemas from the subset host/grammar/json_schema.hpp supports, each
turned into a grammar and generated through BatchGenerator over a toy vocabulary with random
logits (tests/grammar/schema_outputs.cpp); every output must end by the grammar (not by the
token limit), parse as JSON and validate against its schema with python3-jsonschema, an
independent validator. Exit 77 (skipped) without python3-jsonschema.

usage: schema_outputs_test.py SCHEMA_OUTPUTS_PROGRAM
"""

import json
import os
import random
import shlex
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is not installed (scripts/deps.sh installs it): skipped")
    sys.exit(77)

COUNT = 200
NAMES = ["id", "name", "a", "ab", "a b", "caf\u00e9", 'q"t', "back\\slash", "n1", "x_y", "\u65e5"]


def scalar(rng):
    return rng.choice([0, -3, 17, 2.5, -0.125, 1e10, True, False, None, "", "s", "caf\u00e9", 'q"\\', "\u65e5\u672c",
                       "line\nbreak"])


def schema(rng, depth, defs):
    kinds = ["string", "integer", "number", "boolean", "null", "enum", "const", "types"]
    if depth < 3:
        kinds += ["object", "object", "array", "array", "anyOf", "oneOf", "map"]
        if defs:
            kinds.append("ref")
    kind = rng.choice(kinds)
    if kind == "string":
        s = {"type": "string"}
        if rng.random() < 0.5:
            s["minLength"] = rng.randint(0, 3)
        if rng.random() < 0.5:
            s["maxLength"] = s.get("minLength", 0) + rng.randint(0, 4)
        return s
    if kind in ("integer", "number", "boolean", "null"):
        return {"type": kind}
    if kind == "enum":
        return {"enum": [scalar(rng) for _ in range(rng.randint(1, 4))] + ([[1, "x"]] if rng.random() < 0.2 else [])}
    if kind == "const":
        return {"const": rng.choice([scalar(rng), {"k": [1, None]}, [True, "v"]])}
    if kind == "types":
        return {"type": rng.sample(["string", "integer", "number", "boolean", "null", "array", "object"], 2),
                "description": "a type array"}
    if kind == "object":
        names = rng.sample(NAMES, rng.randint(0, 4))
        s = {"type": "object", "properties": {n: schema(rng, depth + 1, defs) for n in names}}
        s["required"] = [n for n in names if rng.random() < 0.5]
        if rng.random() < 0.5:
            s["additionalProperties"] = False
        if rng.random() < 0.3:
            del s["type"]
        return s
    if kind == "map":
        return {"type": "object", "additionalProperties": rng.choice([False, True, schema(rng, depth + 1, defs)])}
    if kind == "array":
        s = {"type": "array", "items": schema(rng, depth + 1, defs)}
        if rng.random() < 0.5:
            s["minItems"] = rng.randint(0, 3)
        if rng.random() < 0.5:
            s["maxItems"] = s.get("minItems", 0) + rng.randint(0, 3)
        return s
    if kind == "anyOf":
        return {"anyOf": [schema(rng, depth + 1, defs) for _ in range(rng.randint(1, 3))]}
    if kind == "oneOf":  # branches of disjoint types: a value can match one only
        families = rng.sample(["string", "integer", "boolean", "null", "array", "object"], rng.randint(1, 3))
        branches = []
        for f in families:
            if f == "array":
                branches.append({"type": "array", "items": schema(rng, depth + 1, defs), "maxItems": 3})
            elif f == "object":
                branches.append({"type": "object", "properties": {"k": schema(rng, depth + 1, defs)}})
            else:
                branches.append({"type": f})
        return {"oneOf": branches}
    return {"$ref": "#/$defs/" + rng.choice(sorted(defs))}


def root_schema(rng, seed):
    defs = {}
    if rng.random() < 0.3:
        defs["node"] = {"type": "object", "properties": {"value": {"type": "integer"},
                                                         "children": {"type": "array", "items": {"$ref": "#/$defs/node"},
                                                                      "maxItems": 2}},
                        "required": ["value"], "additionalProperties": False}
        defs["leaf"] = schema(rng, 2, {})
    s = schema(rng, 0, defs)
    if defs:
        s = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": defs,
             "anyOf": [s, {"$ref": "#/$defs/node"}]}
    return s


def main():
    program = sys.argv[1]
    rng = random.Random(43)
    schemas = [root_schema(rng, i) for i in range(COUNT)]
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = os.path.join(tmp, "schemas.jsonl"), os.path.join(tmp, "out.jsonl")
        with open(inp, "w", encoding="utf-8") as f:
            for i, s in enumerate(schemas):
                f.write(json.dumps({"seed": 1000 + i, "schema": s}) + "\n")
        # In a cross-build the program runs under its emulator (VKF_TEST_EMULATOR, tests/apps/cli_checks.py).
        emulator = shlex.split(os.environ.get("VKF_TEST_EMULATOR", ""))
        subprocess.run(emulator + [program, inp, out], check=True, timeout=600)
        with open(out, encoding="utf-8") as f:
            results = [json.loads(line) for line in f]
    assert len(results) == COUNT, f"{len(results)} outputs for {COUNT} schemas"
    failures, tokens, kinds = [], 0, set()
    for i, (s, r) in enumerate(zip(schemas, results)):
        tokens += r["tokens"]
        if r["stop"] != "stop":
            failures.append(f"schema {i}: ended by {r['stop']} ({r['error']}) after {r['tokens']} tokens: "
                            f"{json.dumps(s)}\n  text: {r['text'][:300]!r}")
            continue
        try:
            value = json.loads(r["text"])
            jsonschema.Draft202012Validator(s).validate(value)
            kinds.add(type(value).__name__)
        except (ValueError, jsonschema.ValidationError) as e:
            failures.append(f"schema {i}: {json.dumps(s)}\n  text: {r['text']!r}\n  {str(e).splitlines()[0]}")
    print(f"{COUNT} schemas, {tokens} tokens generated, top-level kinds {sorted(kinds)}, {len(failures)} failures")
    for f in failures[:20]:
        print(f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
