#!/usr/bin/env python3
"""vkf-tokenize against an independent implementation: Hugging Face's tokenizers.js
(@huggingface/tokenizers 0.2.0, installed once with npm into the build directory) encodes the same
texts with every fixture of tests/text/data, and the ids must be equal, exactly.

Where tokenizers.js itself departs from Hugging Face's Python/Rust library (what vkformer follows),
the case is left out of the comparison, each with the reason below; the C++ is not bent to it.

Exit 77 (skipped) when node or npm is missing or the npm registry cannot be reached.

usage: hf_tokenizers_test.py PATH/TO/vkf-tokenize FIXTURE_DIR NPM_DIR
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps"))
from cli_checks import fail, finish, run  # noqa: E402

TOKENIZE, FIXTURES, NPM_DIR = sys.argv[1], sys.argv[2], sys.argv[3]
PACKAGE = "@huggingface/tokenizers"
VERSION = "0.2.0"
ENCODE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf_tokenizers_encode.mjs")

TEXTS = [
    # English
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "Hello, world! How's it going? I'm fine; they'll see, we've won, you'd know, I'd'VE",
    "the then there and world world-wide Hello Hellos",
    "a" * 300,  # longer than the model's cached pieces
    "",
    # multilingual
    "日本語のテキスト、日本。",
    "中文分词测试：你好，世界！",
    "Привет, мир! Как дела?",
    "مرحبا بالعالم، كيف حالك؟",
    "שלום עולם",
    "हिन्दी पाठ। नमस्ते",
    "Ελληνικά κείμενα ΟΔΥΣΣΕΥΣ",
    "Ünïcödé çàfé naïve İstanbul",
    "e\u0301 combining mark, a\u0308\u0301 two",
    "emoji 🙂👍🏽 👨‍👩‍👧‍👦 family 🏳️‍🌈 flag",
    "한국어 문장입니다",
    "ﬁ ligature ＡＢＣ full width ① circled ℌ",
    # whitespace
    "  leading spaces",
    "trailing spaces   ",
    "a  b   c    d",
    "tabs\tand\t\ttabs",
    "new\nlines\n\nand\r\nCRLF\n",
    "mixed \t\n  whitespace \n",
    "\u00a0non-breaking\u3000ideographic\u2003em",
    "zero\ufeffwidth no-break, next\u0085line",
    # digits
    "123 4567 89012",
    "pi is 3.14159, e=2.71828",
    "2024-01-02 12:30 ٣٤ ²",
    # punctuation
    "Wait... what?! (yes) [no] {maybe} <tag> \"quoted\" 'single' a-b_c",
    "¿Qué? ¡Sí! «guillemets» — dash – en $5 + 3 = 8 ^_^ ~x|y",
    "co-operate -- well---done -",
    # added tokens, inside words too
    "Hello<|endoftext|>world",
    "<|endoftext|><|endoftext|>",
    "a <mask> b   <mask>",
    "x<mask>y",
    "[rs]   after [rs]\tx",
    "pre[rs]post",
    "word keyword words word. (word)",
    "<s>text</s> <pad>",
    "HELLO Hello hello ABC abc Abc",
    "<unk> a<s>b",
]

# Fixtures whose split behavior tokenizers.js does not implement (its README: MergedWithPrevious,
# MergedWithNext and Contiguous; its Punctuation always groups runs of punctuation, which is
# Contiguous, not the Isolated of punctuation.json).
NOT_COMPARED = {
    "split_merged_previous.json": "tokenizers.js has no MergedWithPrevious",
    "split_merged_next.json": "tokenizers.js has no MergedWithNext",
    "split_contiguous.json": "tokenizers.js has no Contiguous",
    "punctuation.json": "tokenizers.js's Punctuation ignores the behavior (always Contiguous)",
}

BYTE_LEVEL_REGEX = {"byte_bpe.json", "byte_bpe_pairs.json", "template_bos_eos.json", "nfkc_lowercase.json",
                    "sequence.json"}


def left_out(fixture, text):
    """Why tokenizers.js cannot be compared with Hugging Face on this text and fixture, or None."""
    if fixture in BYTE_LEVEL_REGEX | {"whitespace_split.json"} and re.search("[\ufeff\u0085\u180e]", text):
        # GPT-2's regex and WhitespaceSplit run as JavaScript RegExps, whose \s takes U+FEFF and
        # not U+0085 (Rust's White_Space: the other way round).
        return "JavaScript's \\s"
    if fixture == "whitespace.json" and not text.isascii():
        # Its Whitespace pattern has no u flag: \w is ASCII only.
        return "ASCII-only \\w"
    if fixture in ("digits.json", "digits_contiguous.json", "sequence.json") and any(
            c.isnumeric() and not c.isascii() for c in text):
        # Its Digits uses \d, which is ASCII in JavaScript; Hugging Face splits every numeric character.
        return "ASCII-only \\d"
    if fixture in ("byte_bpe.json", "byte_bpe_pairs.json") and re.search(r"\wword|word\w", text):
        # It ignores single_word ("word" is a single_word token there).
        return "single_word ignored"
    if fixture == "nfkc_lowercase.json" and "Σ" in text:
        # Its Lowercase is String.toLowerCase, which makes a final Σ ς; Rust's char::to_lowercase
        # maps each character alone (σ).
        return "final sigma"
    return None


def ensure_package():
    """The path of tokenizers.js's ES module, installed into NPM_DIR when it is not there yet."""
    module = os.path.join(NPM_DIR, "node_modules", PACKAGE, "dist", "tokenizers.mjs")
    manifest = os.path.join(NPM_DIR, "node_modules", PACKAGE, "package.json")
    if os.path.exists(module) and os.path.exists(manifest):
        with open(manifest, encoding="utf-8") as f:
            if json.load(f).get("version") == VERSION:
                return module
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            print("SKIPPED: %s is not installed (scripts/deps.sh installs Node.js and npm)" % tool)
            sys.exit(77)
    os.makedirs(NPM_DIR, exist_ok=True)
    try:
        proc = subprocess.run(["npm", "install", "--prefix", NPM_DIR, "--no-audit", "--no-fund",
                               "%s@%s" % (PACKAGE, VERSION)], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        print("SKIPPED: npm install %s@%s took over 5 minutes (registry unreachable?)" % (PACKAGE, VERSION))
        sys.exit(77)
    if proc.returncode != 0 or not os.path.exists(module):
        print("SKIPPED: npm could not install %s@%s (registry unreachable?):\n%s" %
              (PACKAGE, VERSION, proc.stderr.strip()[-2000:]))
        sys.exit(77)
    return module


def main():
    module = ensure_package()
    fixtures = sorted(f for f in os.listdir(FIXTURES) if f.endswith(".json"))
    compared = [f for f in fixtures if f not in NOT_COMPARED]
    paths = [os.path.join(FIXTURES, f) for f in compared]
    job = json.dumps({"package": module, "tokenizers": paths, "texts": TEXTS})
    proc = subprocess.run(["node", ENCODE_SCRIPT], input=job, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        fail("tokenizers.js failed: " + proc.stderr)
        return finish("")
    expected = json.loads(proc.stdout)

    pairs = 0
    mismatches = 0
    skipped = {}
    with tempfile.TemporaryDirectory(prefix="vkf_hf_tokenizers_") as tmp:
        # The texts go through files: exact bytes, whatever they start with.
        text_files = []
        for i, text in enumerate(TEXTS):
            text_files.append(os.path.join(tmp, "%d.txt" % i))
            with open(text_files[-1], "w", encoding="utf-8", newline="") as f:
                f.write(text)
        for fixture, path in zip(compared, paths):
            for text, text_file, js_ids in zip(TEXTS, text_files, expected[path]):
                reason = left_out(fixture, text)
                if reason is not None:
                    skipped[reason] = skipped.get(reason, 0) + 1
                    continue
                pairs += 1
                mismatches += not same_ids(fixture, path, text, text_file, js_ids)
    print("compared %d texts x %d tokenizers: %d (text, tokenizer) pairs, %d mismatches" %
          (len(TEXTS), len(compared), pairs, mismatches))
    print("left out: %s; fixtures not compared: %s" %
          (", ".join("%d for %s" % (n, r) for r, n in sorted(skipped.items())) or "none",
           ", ".join("%s (%s)" % item for item in sorted(NOT_COMPARED.items()))))
    return finish("vkf-tokenize gives tokenizers.js's ids on every compared pair")


def same_ids(fixture, path, text, text_file, js_ids):
    result = run(TOKENIZE, ["--tokenizer", path, "--json", "--file", text_file])
    if result.returncode != 0:
        fail("%s %r: vkf-tokenize exited %d: %s" % (fixture, text, result.returncode, result.stderr))
        return False
    ids = json.loads(result.stdout)["ids"]
    if ids != js_ids:
        fail("%s %r:\n  vkf-tokenize   %s\n  tokenizers.js  %s" % (fixture, text, ids, js_ids))
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
