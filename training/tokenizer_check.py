"""tokenizer_check.json: texts and the ids this Python encoder gives them, the expected
answers for vkformer's C++ tokenizer. The texts cover what the GPT-2 pre-tokenizer regex and
the byte-level map treat differently: contractions, digits, punctuation runs, every kind of
whitespace run, multi-byte UTF-8 (CJK, Arabic, emoji with joiners and skin tones,
combining marks, 4-byte characters) and text the model has never seen.
No control characters other than tab, newline and carriage return: Unicode engines
disagree on whether U+001C..U+001F are whitespace.
"""

import json

FIXED_TEXTS = [
    "In the beginning God created the heaven and the earth.",
    "Genesis 1\n1 In the beginning God created the heaven and the earth.\n2 And the earth was without form, and void;",
    "And the LORD'S house, Israel's king; I'll go, we've seen, they're here, he'd say, 'tis so, I'm done.",
    "DON'T SHOUT: It'S mixed 'S case",
    "3.14159 2024 1,000,000 0x1F 12345678901234567890 4th 1st 2nd",
    "...!?;:-- (a) [b] {c} \"quoted\" 'single' <tag/> a+b=c 50% #1 @home ~/dir",
    "a  b   c    d     e",
    "   leading spaces and trailing   ",
    "line one\nline two\n\nafter a blank line\n\n\n   indented\n",
    "\tcol1\tcol2\t\tcol4\n\t\n",
    "windows\r\nline\r\nendings\r\n",
    "mixed \t\n whitespace \n\t \n",
    " ",
    "\n",
    "",
    "你好，世界。日本語のテキストです。한국어 문장",
    "مرحبا بالعالم، في البدء كان الكلمة",
    "Emoji 🙂 👍🏽 family 👨‍👩‍👧 flag 🇬🇧 done",
    "decomposed e\u0301 n\u0303 a\u0308 vs precomposed é ñ ä",
    "Ἐν ἀρχῇ ἦν ὁ λόγος — В начале было Слово",
    "नमस्ते दुनिया",
    "math: ∑ x² ≤ ∞ ± √2, ½ ¾",
    "no\u00a0break and zero\u200bwidth",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛",
    "https://example.com/path?q=1&r=2#frag",
    "def f(x):\n    return x ** 2  # square\n",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
]


def check_texts(heldout):
    """The fixed texts plus four verses' worth of held-out English."""
    lines = heldout.split("\n")
    samples = ["\n".join(lines[0:4]), lines[200], lines[len(lines) // 2] + "\n", "\n".join(lines[-6:])]
    return FIXED_TEXTS + samples


def write(tokenizer, heldout, path):
    cases = [{"text": t, "ids": tokenizer.encode(t)} for t in check_texts(heldout)]
    for case in cases:
        assert tokenizer.decode(case["ids"]) == case["text"], case["text"]
    with open(path, "w", encoding="utf-8") as f:
        # One case per line: readable, and a diff shows which text changed.
        f.write("[\n" + ",\n".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n]\n")
    return len(cases)
