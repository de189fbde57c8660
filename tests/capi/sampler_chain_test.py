"""The whole sampler chain through the C API (issue 43): vkf_generate with every field of
vkf_sampling_params set gives the ids vkf-run gives with the same options and seed, for the
request server_sampling.py sends vkf-server (whose text there equals vkf-run's): one library
sampler behind all three.
usage: sampler_chain_test.py VKF_RUN CAPI_SAMPLED_IDS MODEL_DIR"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "apps"))
sys.path.insert(0, os.path.join(HERE, "..", "serve"))
from cli_checks import fail, finish, run, run_json  # noqa: E402
from server_sampling import FIELDS, PROMPT, run_options  # noqa: E402

RUN, SAMPLED_IDS, MODEL = sys.argv[1:4]
N = 12
# The server's request fields by vkf_sampling_params' names (docs/API.md "The sampler chain").
C_NAMES = {"temperature": "temperature", "top_k": "top_k", "top_p": "top_p", "min_p": "min_p",
           "typical_p": "typical_p", "repetition_penalty": "repetition_penalty",
           "presence_penalty": "presence_penalty", "frequency_penalty": "frequency_penalty",
           "repeat_last_n": "penalty_last_n", "seed": "seed"}


def c_fields(fields):
    args = []
    for key, value in fields.items():
        if key == "logit_bias":
            args += ["bias=%s:%s" % (token, bias) for token, bias in value.items()]
        else:
            args.append("%s=%s" % (C_NAMES[key], value))
    return args


def c_ids(fields, prompt_ids):
    proc = run(SAMPLED_IDS, [MODEL, str(N)] + c_fields(fields) + ["--"] + [str(i) for i in prompt_ids])
    if proc.returncode != 0:
        fail("capi_sampled_ids failed: %s" % proc.stderr)
        return None
    return [int(x) for x in proc.stdout.split()]


def check(fields):
    """vkf_generate's ids against vkf-run's for `fields`; vkf-run's ids (None when it failed)."""
    expected = run_json(RUN, ["--model", MODEL, "--prompt", PROMPT, "--n-predict", str(N)] + run_options(fields))
    if expected is None:
        return None
    got = c_ids(fields, expected["prompt_ids"])
    if got != expected["generated_ids"]:
        fail("%r: vkf_generate gave %r, vkf-run with the same options %r" % (fields, got, expected["generated_ids"]))
    return expected


def main():
    unmapped = set(FIELDS) - set(C_NAMES) - {"logit_bias"}
    if unmapped:
        fail("server_sampling's FIELDS has fields this test cannot map to the C API: %s" % unmapped)
        return finish("")
    expected = check(FIELDS)
    if expected is None:
        return finish("")
    ids = expected["generated_ids"]
    # Where FIELDS' min_p and logit_bias change nothing in 12 tokens: a min_p that cuts and a
    # ban of the 2nd token sampled, which move the ids.
    moved = check(dict(FIELDS, min_p=0.2, logit_bias={str(ids[1]): -100, "17": 1.5}))
    if moved is not None and moved["generated_ids"] == ids:
        fail("min_p 0.2 and a ban of token %d left the ids %r" % (ids[1], ids))
    # The chain does something: greedy's ids differ (else equal ids would prove nothing).
    if c_ids({"temperature": 0}, expected["prompt_ids"]) == ids:
        fail("greedy gave the sampled ids %r: the sampler fields changed nothing" % ids)
    return finish("capi sampler chain: vkf_generate's ids equal vkf-run's %r" % ids)


if __name__ == "__main__":
    sys.exit(main())
