#!/usr/bin/env python3
"""vkf-tokenize against independent implementations of Hugging Face's tokenizers, with every
fixture of tests/text/data on a list of texts (English, multilingual, whitespace runs, digits,
punctuation, added tokens inside words):

- Hugging Face's tokenizers.js (@huggingface/tokenizers 0.2.0, pure JavaScript): the ids must be
  equal, exactly. Where tokenizers.js itself departs from Hugging Face's Python/Rust library
  (what vkformer follows), the case is left out, each with its reason below; the C++ is not bent
  to it.
- the Node binding of Hugging Face's Rust library (npm "tokenizers" 0.23.2, the library the
  Python package wraps): the ids, the decoded text and the text decoded without special tokens
  must be equal, with nothing left out. Compared where npm installs it and its native module
  loads; otherwise the run says so and goes on.

Both are installed once with npm into NPM_DIR. Exit 77 (skipped) when node or npm is missing or
the npm registry cannot be reached.

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
TOKENIZERS_JS = ("@huggingface/tokenizers", "0.2.0", os.path.join("dist", "tokenizers.mjs"))
TOKENIZERS_RUST = ("tokenizers", "0.23.2", "")
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
    "zero\ufeffwidth no-break, next\u0085line \u180e",
    # digits
    "123 4567 89012",
    "pi is 3.14159, e=2.71828",
    "2024-01-02 12:30 ٣٤ ²",
    # punctuation and the split behaviors
    "Wait... what?! (yes) [no] {maybe} <tag> \"quoted\" 'single' a-b_c",
    "¿Qué? ¡Sí! «guillemets» — dash – en $5 + 3 = 8 ^_^ ~x|y",
    "co-operate -- well---done -",
    "x--y-x- -a--b",
    # added tokens, inside words too
    "Hello<|endoftext|>world",
    "<|endoftext|><|endoftext|>",
    "a <mask> b   <mask>",
    "x<mask>y <mask><mask>",
    "[rs]   after [rs]\tx [rs]  [rs]",
    "pre[rs]post",
    "word keyword words word. (word) word_ wörd",
    "<s>text</s> <pad>",
    "HELLO Hello hello ABC abc Abc",
    "<unk> a<s>b",
    # BERT's WordPiece (bert_wordpiece.json): cleaning, CJK ideographs, accents, greedy pieces
    "[CLS] Hello, [MASK]! [mask] [SEP]",
    "unaffable playing played plays abx worldq helloworld don't it's",
    "Caf\u00e9 NA\u00cfVE CAF\u00c9S \u00d8\u00f8 cafe\u0301 \u0130stanbul",
    "hello\x0bworld hello\u200bworld hello\ue000world hello\ufffdworld hello\x00world hello\u2028world",
    "a\U0002B820 a\U0002B920 a\U00020000 \u4e2d\u6587 \u3053\u3093\u306b\u3061\u306f",
    "a" * 100 + " " + "a" * 101 + " " + "\u00f8" * 101,
]



def random_texts(count, seed):
    """Seeded random strings of code points from many scripts, whitespace, digits, punctuation and
    the fixtures' added tokens, for the comparison with the Rust library. The blocks are ones whose
    letters, marks and digits were all in Unicode 14 (PCRE2 10.42's tables) or that are still
    unassigned (plane 5): a character assigned later, such as a CJK Extension H ideograph (Unicode
    15), is a letter to Hugging Face's Oniguruma and not yet to PCRE2 10.42 (docs/DESIGN.md)."""
    import random
    rng = random.Random(seed)
    ranges = [(0x20, 0x7E), (0x00, 0x1F), (0xA0, 0xFF), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF),
              (0x590, 0x6FF), (0x900, 0x97F), (0x2000, 0x206F), (0x3000, 0x30FF), (0x4E00, 0x9FFF),
              (0xAC00, 0xD7A3), (0xFE00, 0xFFFD), (0x1F300, 0x1FAFF), (0x10000, 0x1007F), (0x1D400, 0x1D7FF),
              (0x20000, 0x2A6DF), (0xE0000, 0xE007F), (0x50000, 0x5FFFF)]
    pieces = [" ", "  ", "\t", "\n", "-", "--", "0", "12", ",", "!?", "'s", "<mask>", " <mask> ", "[rs]",
              "word", "<|endoftext|>", "Hello", "HELLO", "ABC", "<s>", "</s>", "x-y", "Σ"]
    texts = []
    for _ in range(count):
        out = []
        for _ in range(rng.randint(1, 40)):
            if rng.random() < 0.3:
                out.append(rng.choice(pieces))
            else:
                lo, hi = rng.choice(ranges)
                cp = rng.randint(lo, hi)
                out.append(chr(cp) if not 0xD800 <= cp <= 0xDFFF else "x")
        texts.append("".join(out))
    return texts


# Fixtures whose split behavior tokenizers.js does not implement (its README: MergedWithPrevious,
# MergedWithNext and Contiguous; its Punctuation always groups runs of punctuation, which is
# Contiguous, not the Isolated of punctuation.json).
JS_NOT_COMPARED = {
    "split_merged_previous.json": "tokenizers.js has no MergedWithPrevious",
    "split_merged_next.json": "tokenizers.js has no MergedWithNext",
    "split_contiguous.json": "tokenizers.js has no Contiguous",
    "punctuation.json": "tokenizers.js's Punctuation ignores the behavior (always Contiguous)",
    "continuing_prefix.json": "tokenizers.js has no continuing_subword_prefix",
    "byte_level_normalizer.json": "tokenizers.js has no ByteLevel normalizer",
}

BYTE_LEVEL_REGEX = {"byte_bpe.json", "byte_bpe_pairs.json", "template_bos_eos.json", "nfkc_lowercase.json",
                    "sequence.json"}


def js_left_out(fixture, text):
    """Why tokenizers.js departs from Hugging Face's library on this text and fixture, or None."""
    if fixture in BYTE_LEVEL_REGEX | {"whitespace_split.json", "end_of_word_suffix.json"} and re.search(
            "[\ufeff\u0085\u180e]", text):
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
    if fixture in ("byte_bpe.json", "byte_bpe_pairs.json", "bpe_gaps.json") and re.search(r"\wword|word\w", text):
        # It ignores single_word ("word" is a single_word token there).
        return "single_word ignored"
    if fixture == "sentencepiece_style.json" and not text.isascii():
        # Non-ASCII characters are unk there. Hugging Face's BPE emits a pending unk only before
        # the next character in the vocabulary, so after any byte-fallback tokens between (its
        # merge_word); tokenizers.js keeps the text's order.
        return "unk after byte fallback"
    if fixture in ("bert_wordpiece.json", "wordpiece_gaps.json") and any(ord(c) > 0xFFFF for c in text):
        # Its BertNormalizer looks at UTF-16 code units, so it never puts spaces around the
        # ideographs outside the BMP (CJK extensions B to E).
        return "CJK outside the BMP"
    if fixture == "nfkc_lowercase.json" and "Σ" in text:
        # Its Lowercase is String.toLowerCase, which makes a final Σ ς; Rust's char::to_lowercase
        # maps each character alone (σ).
        return "final sigma"
    return None


def skip(message):
    print("SKIPPED: " + message)
    sys.exit(77)


def install(package):
    """The path of `package`'s entry, installed into NPM_DIR when it is not there yet; None when
    npm cannot install it (with npm's message printed)."""
    name, version, entry = package
    folder = os.path.abspath(os.path.join(NPM_DIR, "node_modules", name))
    manifest = os.path.join(folder, "package.json")
    if os.path.exists(manifest):
        with open(manifest, encoding="utf-8") as f:
            if json.load(f).get("version") == version:
                return os.path.join(folder, entry)
    os.makedirs(NPM_DIR, exist_ok=True)
    try:
        proc = subprocess.run(["npm", "install", "--prefix", NPM_DIR, "--no-audit", "--no-fund",
                               "%s@%s" % (name, version)], capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        print("npm install %s@%s took over 10 minutes" % (name, version))
        return None
    if proc.returncode != 0 or not os.path.exists(manifest):
        print("npm could not install %s@%s:\n%s" % (name, version, proc.stderr.strip()[-2000:]))
        return None
    return os.path.join(folder, entry)


ALL_TEXTS = TEXTS + random_texts(40, 20261124)


def reference(implementation, module, paths, texts):
    """{tokenizer.json path: [result per text]} from hf_tokenizers_encode.mjs, or None."""
    job = json.dumps({"implementation": implementation, "module": module, "tokenizers": paths, "texts": texts})
    proc = subprocess.run(["node", ENCODE_SCRIPT], input=job, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        print("%s did not run:\n%s" % (implementation, proc.stderr.strip()[-2000:]))
        return None
    return json.loads(proc.stdout)


class Ours:
    """vkf-tokenize's ids and decoded texts, each asked once."""

    def __init__(self, tmp):
        # The texts go through files: exact bytes, whatever they start with.
        self.files = []
        for i, text in enumerate(ALL_TEXTS):
            self.files.append(os.path.join(tmp, "%d.txt" % i))
            with open(self.files[-1], "w", encoding="utf-8", newline="") as f:
                f.write(text)
        self.cache = {}

    def ids(self, path, index):
        key = (path, index)
        if key not in self.cache:
            result = run(TOKENIZE, ["--tokenizer", path, "--json", "--file", self.files[index]])
            if result.returncode != 0:
                fail("%s %r: vkf-tokenize exited %d: %s" % (os.path.basename(path), ALL_TEXTS[index], result.returncode,
                                                            result.stderr))
                self.cache[key] = None
            else:
                self.cache[key] = json.loads(result.stdout)["ids"]
        return self.cache[key]

    @staticmethod
    def decode(path, ids, skip_special):
        if not ids:
            return ""
        args = ["--tokenizer", path, "--json", "--decode", ",".join(map(str, ids))]
        result = run(TOKENIZE, args + (["--skip-special"] if skip_special else []))
        if result.returncode != 0:
            fail("vkf-tokenize %s exited %d: %s" % (" ".join(args), result.returncode, result.stderr))
            return None
        return json.loads(result.stdout)["text"]


def compare_js(ours, fixtures, expected):
    pairs = mismatches = 0
    left_out = {}
    for fixture in fixtures:
        path = os.path.join(FIXTURES, fixture)
        for index, (text, js) in enumerate(zip(TEXTS, expected[path])):
            reason = js_left_out(fixture, text)
            if reason is not None:
                left_out[reason] = left_out.get(reason, 0) + 1
                continue
            pairs += 1
            ids = ours.ids(path, index)
            if ids != (js if isinstance(js, str) else js["ids"]):
                mismatches += 1
                fail("%s %r:\n  vkf-tokenize   %s\n  tokenizers.js  %s" % (fixture, text, ids, js))
    print("tokenizers.js %s: %d texts x %d tokenizers, %d (text, tokenizer) pairs compared, %d mismatches" %
          (TOKENIZERS_JS[1], len(TEXTS), len(fixtures), pairs, mismatches))
    print("  left out: %s; tokenizers not compared: %s" %
          (", ".join("%d for %s" % (n, r) for r, n in sorted(left_out.items())) or "none",
           ", ".join("%s (%s)" % item for item in sorted(JS_NOT_COMPARED.items()))))


def compare_rust(ours, fixtures, expected):
    pairs = mismatches = 0
    for fixture in fixtures:
        path = os.path.join(FIXTURES, fixture)
        for index, (text, rust) in enumerate(zip(ALL_TEXTS, expected[path])):
            pairs += 1
            ids = ours.ids(path, index)
            if isinstance(rust, str) or ids != rust["ids"]:
                mismatches += 1
                fail("%s %r:\n  vkf-tokenize  %s\n  tokenizers    %s" % (fixture, text, ids, rust))
                continue
            for skip_special, key in ((False, "text"), (True, "text_skip")):
                decoded = ours.decode(path, ids, skip_special)
                if decoded != rust[key]:
                    mismatches += 1
                    fail("%s %r: decode%s gives %r, Hugging Face's %r" %
                         (fixture, text, " --skip-special" if skip_special else "", decoded, rust[key]))
    print("tokenizers %s (Rust): %d texts (%d of them seeded random) x %d tokenizers, %d (text, tokenizer) pairs "
          "compared (ids and both decodes), %d mismatches" %
          (TOKENIZERS_RUST[1], len(ALL_TEXTS), len(ALL_TEXTS) - len(TEXTS), len(fixtures), pairs, mismatches))


def main():
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            skip("%s is not installed (scripts/deps.sh installs Node.js and npm)" % tool)
    js_module = install(TOKENIZERS_JS)
    if js_module is None:
        skip("npm could not install %s@%s (registry unreachable?)" % TOKENIZERS_JS[:2])
    fixtures = sorted(f for f in os.listdir(FIXTURES) if f.endswith(".json"))
    js_fixtures = [f for f in fixtures if f not in JS_NOT_COMPARED]
    js_expected = reference("tokenizers.js", js_module, [os.path.join(FIXTURES, f) for f in js_fixtures], TEXTS)
    if js_expected is None:
        fail("tokenizers.js failed")
        return finish("")
    with tempfile.TemporaryDirectory(prefix="vkf_hf_tokenizers_") as tmp:
        ours = Ours(tmp)
        compare_js(ours, js_fixtures, js_expected)
        rust_module = install(TOKENIZERS_RUST)
        rust_expected = None if rust_module is None else reference(
            "tokenizers", rust_module, [os.path.join(FIXTURES, f) for f in fixtures], ALL_TEXTS)
        if rust_expected is None:
            print("tokenizers %s (Rust): not compared (see above)" % TOKENIZERS_RUST[1])
        else:
            compare_rust(ours, fixtures, rust_expected)
    return finish("vkf-tokenize gives Hugging Face's ids on every compared pair")


if __name__ == "__main__":
    sys.exit(main())
