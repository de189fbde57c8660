"""Refact from GGUF against llama.cpp itself (gguf_families_test.py's part that needs no
directory): the GGUF files that test converted are run by llama.cpp's libllama (llama_logits.py)
on the prompt and vkformer's greedy continuation, and vkf-run --model FILE.gguf must give
llama.cpp's logits within a bound relative to the largest, and the ids of llama.cpp's argmax.
A file with K and V swapped (the one K/V head mapped wrongly) must leave that bound in
llama.cpp: the check can fail."""

import os

import llama_logits
from cli_checks import fail

# Relative to the largest logit, on the random tiny Refact (6 heads, hidden 192). f32: ggml's and
# vkformer's float32 sums in other orders (3e-7 seen); f16: ggml's CPU rounds the activations to
# f16 for F16 matrices, vkformer keeps them in f32.
# q8_0: ggml also quantizes the activations to Q8_0 blocks for Q8_0 matrices (8.5e-3 seen).
APART = {"f32": 1e-5, "f16": 5e-3, "q8_0": 2.5e-2}


def refact_against_llama(np, gguf, gguf_py, npm_dir, vkf_run, tmp, convert, greedy, prompt):
    why = llama_logits.unavailable()
    if why is not None:
        print("refact vs llama.cpp     skipped: %s" % why)
        return
    tool, libs = llama_logits.build(npm_dir, gguf_py)
    prompt_ids = [int(i) for i in prompt.split(",")]
    ours_f32 = None
    for dtype, bound in APART.items():
        path = os.path.join(tmp, "refact-%s.gguf" % dtype)
        npy = os.path.join(tmp, "refact-llama-%s.npy" % dtype)
        ours = greedy(vkf_run, path, dtype, npy)
        if ours is None:
            continue
        generated = ours["generated_ids"]
        a = np.load(npy)
        theirs = llama_logits.logits(np, tool, libs, path, prompt_ids + generated[:-1],
                                     os.path.join(tmp, "llama.f32"))[len(prompt_ids) - 1:]
        if a.shape != theirs.shape:
            fail("refact %s: vkformer's logits %s, llama.cpp's %s" % (dtype, a.shape, theirs.shape))
            continue
        apart = float(np.max(np.abs(a - theirs)) / np.max(np.abs(theirs)))
        their_ids = [int(i) for i in np.argmax(theirs, axis=1)]
        if their_ids != generated or not apart < bound:
            fail("refact %s: vkformer %r, llama.cpp's argmax %r; logits %g apart, expected < %g"
                 % (dtype, generated, their_ids, apart, bound))
        print("%-22s ids %s, llama.cpp's argmax %s, logits %.3g apart from llama.cpp's (bound %g)"
              % ("refact %s llama.cpp" % dtype, generated, their_ids, apart, bound))
        if dtype == "f32":
            ours_f32 = (a, prompt_ids + generated[:-1])
    if ours_f32 is None:
        return
    broken = os.path.join(tmp, "refact-kv-swapped.gguf")
    convert(gguf, np, os.path.join(tmp, "refact-f32"), broken, "f32", swap_kv=True)
    theirs = llama_logits.logits(np, tool, libs, broken, ours_f32[1], os.path.join(tmp, "llama.f32"))
    theirs = theirs[len(prompt_ids) - 1:]
    apart = float(np.max(np.abs(ours_f32[0] - theirs)) / np.max(np.abs(theirs)))
    if not apart > APART["f32"]:
        fail("refact with K and V swapped: llama.cpp's logits only %g apart from vkformer's, the check "
             "cannot tell a wrong K/V head mapping" % apart)
    print("%-22s logits %.3g apart from vkformer's (must be > %g)" % ("refact K/V swapped", apart, APART["f32"]))
