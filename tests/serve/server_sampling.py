"""The sampler chain through vkf-server (server_test.py runs it): a request using every sampler
field gives the text vkf-run gives with the same options and seed (one library sampler), so do
min_p, logit_bias, top_k and typical_p each set strongly enough to change that text, a
logit_bias ban changes greedy output, and bad values are 400s naming the field."""

import json

from cli_checks import fail, run
from server_checks import expect_error

PROMPT = "And the LORD said unto Moses"
FIELDS = {"temperature": 0.8, "top_k": 40, "typical_p": 0.95, "top_p": 0.9, "min_p": 0.02,
          "repetition_penalty": 1.15, "presence_penalty": 0.3, "frequency_penalty": 0.2, "repeat_last_n": 32,
          "logit_bias": {"5": -100, "17": 1.5}, "seed": 4242}
FLAGS = {"temperature": "--temp", "top_k": "--top-k", "typical_p": "--typical", "top_p": "--top-p",
         "min_p": "--min-p", "repetition_penalty": "--repeat-penalty", "presence_penalty": "--presence-penalty",
         "frequency_penalty": "--frequency-penalty", "repeat_last_n": "--repeat-last-n", "seed": "--seed"}
# Fields set strongly enough to change FIELDS' text: each must reach the server's sampler as it
# reaches vkf-run's (FIELDS' own min_p and logit_bias change nothing in its 12 tokens).
STRONG = ({"min_p": 0.3}, {"logit_bias": {"5": -100, "17": 1.5, "290": 6}}, {"top_k": 2}, {"typical_p": 0.3})


def run_options(fields):
    options = []
    for name, value in fields.items():
        if name == "logit_bias":
            for token, bias in value.items():
                options += ["--logit-bias", "%s=%s" % (token, bias)]
        else:
            options += [FLAGS[name], str(value)]
    return options


def vkf_run(run_binary, model, options, n):
    proc = run(run_binary, ["--model", model, "--prompt", PROMPT, "--n-predict", str(n), "--json", "--quiet"] + options)
    if proc.returncode != 0:
        fail("vkf-run %s failed: %s" % (" ".join(options), proc.stderr))
        return None
    return json.loads(proc.stdout)["text"]


def completion(server, fields, n):
    status, body = server.post("/v1/completions", dict({"prompt": PROMPT, "max_tokens": n}, **fields))
    if status != 200:
        fail("completion with %r: %s %r" % (fields, status, body))
        return None
    return body["choices"][0]["text"]


def check_sampler_chain(server, run_binary, model):
    n = 12
    sampled = completion(server, FIELDS, n)
    expected = vkf_run(run_binary, model, run_options(FIELDS), n)
    if sampled != expected:
        fail("every sampler field: the server gave %r, vkf-run with the same options %r" % (sampled, expected))
    if completion(server, FIELDS, n) != sampled:
        fail("every sampler field, the same seed twice: different text")
    for strong in STRONG:
        fields = dict(FIELDS, **strong)
        text = completion(server, fields, n)
        if text == sampled:
            fail("%r: the same text as without it, %r" % (strong, text))
        if text != vkf_run(run_binary, model, run_options(fields), n):
            fail("%r: the server gave %r, vkf-run with the same options another text" % (strong, text))
    # Banning greedy's first token changes greedy's text; a neutral bias does not.
    greedy = completion(server, {"temperature": 0}, 1)
    status, body = server.post("/v1/completions", {"prompt": PROMPT, "max_tokens": 1, "temperature": 0,
                                                   "logprobs": None})
    if status != 200 or body["choices"][0]["text"] != greedy:
        fail("greedy with logprobs null: %s %r" % (status, body))
    ids = run(run_binary, ["--model", model, "--prompt", PROMPT, "--n-predict", "1", "--json", "--quiet"])
    first = json.loads(ids.stdout)["generated_ids"][0] if ids.returncode == 0 else None
    if first is None:
        fail("vkf-run greedy: " + ids.stderr)
    else:
        if completion(server, {"temperature": 0, "logit_bias": {str(first): 0}}, 1) != greedy:
            fail("a zero logit_bias changed greedy output")
        if completion(server, {"temperature": 0, "logit_bias": {str(first): -100}}, 1) == greedy:
            fail("logit_bias -100 on greedy's token %d did not change it" % first)
    for fields, param, mentions in (({"logit_bias": {"250880": 1}}, "logit_bias", "outside the vocabulary"),
                                    ({"min_p": 2}, "min_p", "between 0"),
                                    ({"mirostat": 2}, "mirostat", "not supported"),
                                    ({"grammar": "root ::= a"}, "grammar", "used but not defined")):
        status, body = server.post("/v1/completions", dict({"prompt": PROMPT, "max_tokens": 2}, **fields))
        expect_error("sampler field %r" % fields, status, body, 400, param=param, mentions=mentions)
