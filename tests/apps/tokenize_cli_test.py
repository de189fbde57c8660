#!/usr/bin/env python3
"""vkf-tokenize end to end on the tokenizer fixtures of tests/text/data: ids, --json, --file,
--no-special, --decode with and without --skip-special, and the exit status and message of bad
command lines (2), bad files and bad input (1: an id past the vocabulary or in a gap of its ids).

usage: tokenize_cli_test.py PATH/TO/vkf-tokenize FIXTURE_DIR
"""

import json
import os
import sys
import tempfile

from cli_checks import fail, finish, run

TOKENIZE, FIXTURES = sys.argv[1], sys.argv[2]
BYTE_BPE = os.path.join(FIXTURES, "byte_bpe.json")
TEMPLATE = os.path.join(FIXTURES, "template_bos_eos.json")  # <s> 287, </s> 288
BERT = os.path.join(FIXTURES, "bert_wordpiece.json")  # [CLS] 2, [SEP] 3 (make_fixtures.py's WORDPIECE_VOCAB)


def expect(args, code, stdout=None, stderr=None):
    proc = run(TOKENIZE, args)
    if proc.returncode != code or (stdout is not None and proc.stdout != stdout) or (
            stderr is not None and stderr not in proc.stderr):
        fail("vkf-tokenize %s: expected exit %d%s%s, got %d: %r %r" %
             (" ".join(args), code, "" if stdout is None else " printing %r" % stdout,
              "" if stderr is None else " naming %r" % stderr, proc.returncode, proc.stdout, proc.stderr))
    return proc


def main():
    expect(["--tokenizer", BYTE_BPE, "--text", "Hello world"], 0, "271 267\n")
    proc = expect(["--tokenizer", BYTE_BPE, "--text", "Hello world", "--json"], 0)
    if proc.returncode == 0 and json.loads(proc.stdout) != {"ids": [271, 267], "tokens": ["Hello", "Ġworld"]}:
        fail("--json printed %r" % proc.stdout)
    expect(["--tokenizer", TEMPLATE, "--text", "Hello world"], 0, "287 32 271 267 288\n")
    expect(["--tokenizer", TEMPLATE, "--text", "Hello world", "--no-special"], 0, "32 271 267\n")
    expect(["--tokenizer", TEMPLATE, "--decode", "287,32,271,267,288"], 0, "<s> Hello world</s>\n")
    expect(["--tokenizer", TEMPLATE, "--decode", "287,32,271,267,288", "--skip-special"], 0, "Hello world\n")
    expect(["--tokenizer", TEMPLATE, "--decode", "287,32,271", "--skip-special", "--json"], 0,
           '{"text":"Hello"}\n')
    # BERT: lowercased, punctuation alone, un ##aff ##able, [CLS] ... [SEP]; decoded with cleanup.
    expect(["--tokenizer", BERT, "--text", "Hello, World! unaffable"], 0, "2 16 6 17 5 15 28 29 3\n")
    expect(["--tokenizer", BERT, "--decode", "2,16,6,17,5,15,28,29,3", "--skip-special"], 0,
           "hello, world! unaffable\n")
    expect(["--help"], 0)
    expect(["--tokenizer", BYTE_BPE], 2, stderr="give one of --text, --file and --decode")
    expect(["--tokenizer", BYTE_BPE, "--text", "a", "--decode", "1"], 2, stderr="give one of")
    expect(["--tokenizer", BYTE_BPE, "--text", "a", "--skip-special"], 2, stderr="--skip-special is for --decode")
    expect(["--tokenizer", BYTE_BPE, "--decode", "1", "--no-special"], 2, stderr="--no-special is for encoding")
    expect(["--tokenizer", BYTE_BPE, "--decode", "1,x"], 2, stderr="--decode needs a whole number")
    expect(["--text", "a"], 2, stderr="--tokenizer")
    expect(["--tokenizer", BYTE_BPE, "--decode", "5000"], 1, stderr="token id 5000 is not in the vocabulary")
    with tempfile.TemporaryDirectory(prefix="vkf_tokenize_cli_") as tmp:
        text = os.path.join(tmp, "text.txt")
        with open(text, "wb") as f:
            f.write("Hello<|endoftext|>\n\n".encode("utf-8"))
        expect(["--tokenizer", BYTE_BPE, "--file", text], 0, "271 287 274\n")
        with open(text, "wb") as f:
            f.write(b"ok \xff")
        # Named by the text's file and byte (issue 32), not by the tokenizer.json.
        expect(["--tokenizer", BYTE_BPE, "--file", text], 1, stderr="'%s': not valid UTF-8 at byte 3 (0xff)" % text)
        expect(["--tokenizer", BYTE_BPE, "--file", os.path.join(tmp, "none.txt")], 1, stderr="cannot open")
        expect(["--tokenizer", os.path.join(tmp, "none.json"), "--text", "a"], 1, stderr="none.json': cannot open")
        with open(BYTE_BPE, encoding="utf-8") as f:
            document = json.load(f)
        document["model"]["type"] = "Unigram"
        bad = os.path.join(tmp, "unigram.json")
        with open(bad, "w", encoding="utf-8") as f:
            json.dump(document, f)
        expect(["--tokenizer", bad, "--text", "a"], 1,
               stderr="unigram.json: model.type: 'Unigram' is not supported (only BPE and WordPiece)")
        # An id in a gap of model.vocab's ids (-x moved from 286 to 300) is an error like one past
        # the end, not an empty piece.
        with open(BYTE_BPE, encoding="utf-8") as f:
            document = json.load(f)
        document["model"]["vocab"]["-x"] = 300
        gap = os.path.join(tmp, "gap.json")
        with open(gap, "w", encoding="utf-8") as f:
            json.dump(document, f)
        expect(["--tokenizer", gap, "--decode", "300"], 0, "-x\n")
        expect(["--tokenizer", gap, "--decode", "271,286"], 1,
               stderr="gap.json: token id 286 is not in the vocabulary: no token has that id")
    return finish("ok")


if __name__ == "__main__":
    sys.exit(main())
