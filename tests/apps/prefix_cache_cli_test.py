#!/usr/bin/env python3
"""vkf-run --prompt-file with the prefix cache (issue 42), on the shipped model
(models/kjv-bloom): three prompts sharing a preamble of some 200 tokens, one at a time
(--parallel 1, so no two are alive together): the first computes the preamble, the later ones
take its whole blocks from the cache ("cached_tokens" in --json, per prompt and in the
aggregate) and generate the greedy ids and text of --no-prefix-cache, which caches nothing;
--check holds with the cache.

usage: prefix_cache_cli_test.py PATH/TO/vkf-run MODEL_DIR
"""

import os
import sys
import tempfile

from cli_checks import fail, finish, run_json

RUN, MODEL = sys.argv[1:3]
PREAMBLE = " ".join(["And God said, Let there be light: and there was light. And God saw the light, that it was good:"
                     " and God divided the light from the darkness."] * 5)
QUESTIONS = [" And the evening", " Then the LORD", " And Moses said unto"]
BLOCK = 16


def main():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "prompts.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(PREAMBLE + q + "\n" for q in QUESTIONS))
        args = ["--model", MODEL, "--prompt-file", path, "--n-predict", "6", "--ignore-eos", "--parallel", "1"]
        cached = run_json(RUN, args + ["--check"])
        cold = run_json(RUN, args + ["--no-prefix-cache"])
    if cached is None or cold is None:
        return finish("")
    first = cached["results"][0]
    if first["cached_tokens"] != 0:
        fail("the first prompt: %r cached tokens, expected 0" % first["cached_tokens"])
    # What the first prompt computed, in whole blocks, that the others share with it.
    for r, c in zip(cached["results"], cold["results"]):
        n = len(r["prompt_ids"])
        common = 0
        while common < n and r["prompt_ids"][common] == first["prompt_ids"][common]:
            common += 1
        want = 0 if r is first else (min(common, n - 1) // BLOCK) * BLOCK
        if r["cached_tokens"] != want or want == 0 and r is not first:
            fail("line %d: %r cached tokens of %d, expected %d" % (r["line"], r["cached_tokens"], n, want))
        if c["cached_tokens"] != 0:
            fail("--no-prefix-cache, line %d: %r cached tokens" % (c["line"], c["cached_tokens"]))
        if (r["generated_ids"], r["text"]) != (c["generated_ids"], c["text"]):
            fail("line %d: %r with the cache, %r without" % (r["line"], r["text"], c["text"]))
        if not r.get("check", {}).get("max_rel_logit_error", 1) < 1e-3:  # --check's default tolerance
            fail("line %d: --check failed with the cache: %r" % (r["line"], r.get("check")))
        print("line %d: %d of %d prompt tokens cached" % (r["line"], r["cached_tokens"], n))
    total = sum(r["cached_tokens"] for r in cached["results"])
    if cached["aggregate"]["cached_tokens"] != total or cold["aggregate"]["cached_tokens"] != 0 or \
            cached["aggregate"]["prompt_tokens"] != sum(len(r["prompt_ids"]) for r in cached["results"]):
        fail("aggregate: %r, %r" % (cached["aggregate"], cold["aggregate"]))
    return finish("vkf-run --prompt-file with the prefix cache: OK")


if __name__ == "__main__":
    sys.exit(main())
