#!/usr/bin/env python3
"""vkf-run --prompt-cache FILE (issue 42): a run saves its prompt's sequence state, and a later
run in a fresh process restores the prefix the file holds instead of running it, continuing
with the greedy ids of the uninterrupted run (fp16 and q8_0 KV caches; penalties and a
continued prompt with fp16), --json saying whether
the file was used and how many tokens came from it. A state of another model or KV format, a
truncated or corrupted file and a newer format version are refused naming the reason, the file
left as it was.

usage: prompt_cache_cli_test.py PATH/TO/vkf-run PATH/TO/vkf-make-checkpoint MODEL_DIR
"""

import os
import sys
import tempfile

from cli_checks import expect_refused, fail, finish, run, run_json

RUN, MAKE_CHECKPOINT, MODEL = sys.argv[1:4]
PROMPT = [17, 250, 3001, 42, 977, 1200, 5, 64, 2048, 333, 91, 1500, 7, 808, 19, 4000, 23]
N = 16


def ids_text(ids):
    return ",".join(str(i) for i in ids)


def generate(prompt, extra=(), n=N):
    out = run_json(RUN, ["--model", MODEL, "--prompt-ids", ids_text(prompt), "--n-predict", str(n), "--ignore-eos"]
                   + list(extra))
    return out


def check_format(tmp, kv):
    cache = os.path.join(tmp, "cache_%s.bin" % kv)
    flags = ["--kv", kv]
    cold = generate(PROMPT, flags)
    if cold is None:
        return
    whole = cold["generated_ids"]
    if "prompt_cache" in cold:
        fail("a run without --prompt-cache reports one: %s" % cold["prompt_cache"])

    # No file yet: the prompt runs whole and its state is written.
    first = generate(PROMPT, flags + ["--prompt-cache", cache])
    if first is None:
        return
    if first["prompt_cache"] != {"file": cache, "used": False, "tokens": 0, "saved_tokens": len(PROMPT)}:
        fail("%s: the first run's prompt_cache: %s" % (kv, first["prompt_cache"]))
    if first["generated_ids"] != whole:
        fail("%s: a run that saves differs from the cold one: %s vs %s" % (kv, first["generated_ids"], whole))
    if not os.path.isfile(cache):
        fail("%s: no file was written" % kv)
        return

    # A fresh process: all but the prompt's last token come from the file.
    again = generate(PROMPT, flags + ["--prompt-cache", cache])
    if again is not None:
        if again["prompt_cache"]["used"] is not True or again["prompt_cache"]["tokens"] != len(PROMPT) - 1:
            fail("%s: the second run's prompt_cache: %s" % (kv, again["prompt_cache"]))
        if again["generated_ids"] != whole:
            fail("%s: restored from the file, the ids differ: %s vs %s" % (kv, again["generated_ids"], whole))

    if kv != "f16":
        return  # the rest is the same code whatever the cache's format

    # Penalties see the restored prefix as part of the prompt, as in a cold run: a prompt of the
    # ids the model itself likes (those it generated), which the penalties then push down.
    penalties = flags + ["--repeat-penalty", "1.8", "--presence-penalty", "0.5", "--repeat-last-n", "64"]
    liked = PROMPT + whole
    penalized_cache = os.path.join(tmp, "penalized_%s.bin" % kv)
    cold_penalized = generate(liked, penalties)
    saved_penalized = generate(liked, penalties + ["--prompt-cache", penalized_cache])
    cached_penalized = generate(liked, penalties + ["--prompt-cache", penalized_cache])
    if None not in (cold_penalized, saved_penalized, cached_penalized):
        if cached_penalized["prompt_cache"]["tokens"] != len(liked) - 1:
            fail("%s: the penalized run's prompt_cache: %s" % (kv, cached_penalized["prompt_cache"]))
        for out in (saved_penalized, cached_penalized):
            if out["generated_ids"] != cold_penalized["generated_ids"]:
                fail("%s: with penalties, the ids differ from the cold run's: %s vs %s"
                     % (kv, out["generated_ids"], cold_penalized["generated_ids"]))

    # The prompt continued with the first 8 generated ids: the file's prefix is restored and the
    # run goes on as the uninterrupted one did.
    longer = PROMPT + whole[:8]
    resumed = generate(longer, flags + ["--prompt-cache", cache], n=N - 8)
    if resumed is not None:
        if resumed["prompt_cache"]["tokens"] != len(PROMPT) or resumed["prompt_cache"]["saved_tokens"] != len(longer):
            fail("%s: the continued prompt's prompt_cache: %s" % (kv, resumed["prompt_cache"]))
        if resumed["generated_ids"] != whole[8:]:
            fail("%s: continued from the file, the ids differ from the uninterrupted run's: %s vs %s"
                 % (kv, resumed["generated_ids"], whole[8:]))


def refused(tmp, name, data, message, extra=(), model=MODEL):
    path = os.path.join(tmp, name)
    with open(path, "wb") as f:
        f.write(data)
    expect_refused(RUN, ["--model", model, "--prompt-ids", ids_text(PROMPT), "--n-predict", "2", "--quiet",
                         "--prompt-cache", path] + list(extra), 1, message)
    with open(path, "rb") as f:
        if f.read() != data:
            fail("%s: the refused file was changed" % name)


def check_refusals(tmp):
    with open(os.path.join(tmp, "cache_f16.bin"), "rb") as f:
        state = f.read()
    refused(tmp, "other_kv.bin", state, "K quantization: the state has none, this session q8_0", ["--kv", "q8_0"])
    other = os.path.join(tmp, "tiny-bloom")
    proc = run(MAKE_CHECKPOINT, ["--family", "bloom", "--preset", "tiny", "--dtype", "f32", "--out", other])
    if proc.returncode != 0:
        fail("vkf-make-checkpoint exited %d: %s" % (proc.returncode, proc.stderr))
    else:
        refused(tmp, "other_model.bin", state, "another model", model=other)
    refused(tmp, "truncated.bin", state[:-100], "truncated")
    corrupted = bytearray(state)
    corrupted[len(state) // 2] ^= 0x10
    refused(tmp, "corrupted.bin", bytes(corrupted), "CRC-32")
    newer = bytearray(state)
    newer[8] = 2
    refused(tmp, "newer.bin", bytes(newer), "newer than this vkformer reads")
    refused(tmp, "not_state.bin", b"hello, world\n", "not a vkformer sequence state")
    expect_refused(RUN, ["--model", MODEL, "--prompt-file", os.path.join(tmp, "not_state.bin"), "--prompt-cache",
                         os.path.join(tmp, "x.bin")], 2, "--prompt-cache runs one prompt")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_format(tmp, "f16")
        check_format(tmp, "q8_0")
        check_refusals(tmp)
    sys.exit(finish("prompt cache: ok"))


main()
