#!/usr/bin/env python3
"""Writes the tokenizer.json fixtures of tests/text (run it again after changing it; the files are
committed). The fixtures but three (sentencepiece_style, continuing_prefix, end_of_word_suffix,
whose ids are listed with their merges below) share one byte-level BPE vocabulary written so that
ids can be derived by hand in the tests:

  ids 0..255    the byte-level character of byte b has id b ('Ġ', a space, is 32; 'Ċ' is 10)
  ids 256..     one token per merge below, in rank order (MERGES[i] makes id 256 + i)
  ids N..       the fixture's added tokens that are not in the vocabulary, in the order given
                (N = 256 + len(MERGES))

usage: make_fixtures.py [OUT_DIR]   (default: this script's directory)
"""

import json
import os
import sys

# (left, right): the merges in rank order, as byte-level strings.
MERGES = [
    ("Ġ", "t"),      # 256 Ġt
    ("h", "e"),      # 257 he
    ("Ġt", "he"),    # 258 Ġthe
    ("i", "n"),      # 259 in
    ("Ġ", "a"),      # 260 Ġa
    ("n", "d"),      # 261 nd
    ("Ġa", "nd"),    # 262 Ġand
    ("o", "r"),      # 263 or
    ("Ġ", "w"),      # 264 Ġw
    ("Ġw", "or"),    # 265 Ġwor
    ("l", "d"),      # 266 ld
    ("Ġwor", "ld"),  # 267 Ġworld
    ("e", "l"),      # 268 el
    ("el", "l"),     # 269 ell
    ("H", "ell"),    # 270 Hell
    ("Hell", "o"),   # 271 Hello
    ("1", "2"),      # 272 12
    ("Ġ", "Ġ"),      # 273 ĠĠ
    ("Ċ", "Ċ"),      # 274 ĊĊ
    ("i", "s"),      # 275 is
    ("Ġ", "is"),     # 276 Ġis
    ("æ", "Ĺ"),      # 277 æĹ      (the first two bytes of 日, E6 97)
    ("æĹ", "¥"),     # 278 æĹ¥     (日)
    ("ð", "Ł"),      # 279 ðŁ      (F0 9F, how most emoji start)
    ("ĠĠ", "ĠĠ"),    # 280 ĠĠĠĠ
    ("e", "r"),      # 281 er
    # '-' joined to x and y, which nothing else merges: the split behaviors show in the ids.
    ("-", "-"),      # 282 --
    ("x", "-"),      # 283 x-
    ("y", "-"),      # 284 y-
    ("-", "y"),      # 285 -y
    ("-", "x"),      # 286 -x
]


def byte_level_alphabet():
    """GPT-2's map: the character byte b is written as."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars = {}
    extra = 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(0x100 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def vocab():
    tokens = byte_level_alphabet()
    for left, right in MERGES:
        assert left in tokens and right in tokens, (left, right)
        tokens.append(left + right)
    assert len(set(tokens)) == len(tokens)
    return {t: i for i, t in enumerate(tokens)}


N = 256 + len(MERGES)


def model(pairs=False):
    return {
        "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
        "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
        "vocab": vocab(),
        "merges": [[a, b] for a, b in MERGES] if pairs else ["%s %s" % (a, b) for a, b in MERGES],
    }


def added(content, id, special=False, single_word=False, lstrip=False, rstrip=False, normalized=False):
    return {"id": id, "content": content, "single_word": single_word, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": normalized, "special": special}


def byte_level(add_prefix_space=False, use_regex=True):
    return {"type": "ByteLevel", "add_prefix_space": add_prefix_space, "trim_offsets": True, "use_regex": use_regex}


def split(pattern, behavior, invert=False):
    return {"type": "Split", "pattern": pattern, "behavior": behavior, "invert": invert}


def sequence(*pre_tokenizers):
    return {"type": "Sequence", "pretokenizers": list(pre_tokenizers)}


def then_bytes(pre_tokenizer):
    """pre_tokenizer, then the byte map alone (BLOOM's arrangement)."""
    return sequence(pre_tokenizer, byte_level(use_regex=False))


def tokenizer(pre_tokenizer, added_tokens=(), normalizer=None, post_processor=None, decoder=None, pairs=False):
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": list(added_tokens),
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": post_processor if post_processor is not None else byte_level(),
        "decoder": decoder if decoder is not None else byte_level(),
        "model": model(pairs),
    }


# Added tokens of byte_bpe.json: ids N, N+1, N+2, N+3.
BYTE_BPE_ADDED = [
    added("<|endoftext|>", N, special=True),
    added("<mask>", N + 1, special=True, lstrip=True),
    added("[rs]", N + 2, rstrip=True),
    added("word", N + 3, single_word=True),
]


def template(*pieces):
    """TemplateProcessing's single template from "$A" and special token names."""
    single = [{"Sequence": {"id": "A", "type_id": 0}} if p == "$A" else {"SpecialToken": {"id": p, "type_id": 0}}
              for p in pieces]
    return single


def bpe(tokens, merges, **options):
    """A BPE model over `tokens` (ids in order) whose merges' results are appended to them."""
    tokens = list(tokens)
    for left, right in merges:
        prefix = options.get("continuing_subword_prefix") or ""
        assert left in tokens and right in tokens, (left, right)
        tokens.append(left + right[len(prefix):])
    assert len(set(tokens)) == len(tokens)
    model = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
             "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False}
    model.update(options)
    model["vocab"] = {t: i for i, t in enumerate(tokens)}
    model["merges"] = ["%s %s" % m for m in merges]
    return model


LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)]

# SentencePiece's arrangement in BPE (Llama's, without its ByteFallback decoder): "▁" for spaces
# by normalizers, no pre-tokenizer, byte tokens for ASCII only, so other characters are unk,
# fused. Ids: <unk> 0, <s> 1, </s> 2, <0x00>..<0x7F> 3..130, ▁ 131, a..z 132..157, "," 158,
# "." 159, then the merges from 160.
SENTENCEPIECE_MERGES = [("▁", "t"), ("h", "e"), ("▁t", "he"), ("▁", "a"), ("n", "d"), ("▁a", "nd"), ("e", "r"),
                        ("▁", "w"), ("o", "r"), ("▁w", "or"), ("l", "d"), ("▁wor", "ld")]
# A BERT-like arrangement: "##" continues a word. Ids: [UNK] 0, [CLS] 1, [SEP] 2, a..z 3..28,
# ##a..##z 29..54, "." 55, "," 56, "!" 57, then the merges from 58.
CONTINUING_MERGES = [("t", "##h"), ("th", "##e"), ("a", "##n"), ("an", "##d"), ("##e", "##r"), ("w", "##o"),
                     ("wo", "##r"), ("##l", "##d"), ("wor", "##ld")]
# "</w>" ends a word. Ids: <unk> 0, <s> 1, </s> 2, a..z 3..28, a</w>..z</w> 29..54, ".</w>" 55,
# ",</w>" 56, "!</w>" 57, "cat" 58 (no merge makes it: ignore_merges), then the merges from 59.
SUFFIX_MERGES = [("t", "h"), ("th", "e</w>"), ("a", "n"), ("an", "d</w>"), ("e", "r</w>"), ("w", "o"), ("wo", "r"),
                 ("l", "d</w>"), ("wor", "ld</w>")]


def special(content, id):
    return added(content, id, special=True)


# BERT's arrangement (bert-base-uncased, jina-embeddings-v2): BertNormalizer, BertPreTokenizer,
# WordPiece with "##" and its decoder, [CLS] $A [SEP]. A token's id is its index here.
WORDPIECE_VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",                       # 0..4
    "!", ",", ".", "?", "'", "(", ")", "-",                              # 5..12
    "the", "a", "un", "hello", "world", "cafe", "caf\u00e9", "naive",    # 13..20 (19: café, NFC)
    "play", "don", "t", "ab", "\u00f8", "\u4e2d", "\u56fd",              # 21..27 (ø, 中, 国)
    "##aff", "##able", "##s", "##ing", "##ed", "##a", "##world", "##bx",  # 28..35
    "##\u00f8",                                                          # 36 (##ø)
    "quick", "brown", "fox", "jump", "over", "dog", "is", "it", "i",      # 37..45
    "you", "we", "and", "or", "of", "to", "in", "not", "do",              # 46..54
    "##ly", "##er", "##est", "fun",                                      # 55..58
]


FIXTURES = {
    # GPT-2's arrangement: ByteLevel pre-tokenizer with its regex, no normalizer.
    "byte_bpe.json": tokenizer(byte_level(), BYTE_BPE_ADDED),
    # The same with the merges as pairs: the same ids.
    "byte_bpe_pairs.json": tokenizer(byte_level(), BYTE_BPE_ADDED, pairs=True),
    # BOS/EOS through TemplateProcessing, a prefix space, and a decoder that takes it off again.
    "template_bos_eos.json": tokenizer(
        byte_level(add_prefix_space=True),
        [added("<s>", N, special=True), added("</s>", N + 1, special=True), added("<pad>", N + 2, special=True)],
        post_processor={
            "type": "TemplateProcessing",
            "single": template("<s>", "$A", "</s>"),
            "pair": template("<s>", "$A", "</s>", "$B", "</s>"),
            "special_tokens": {
                "<s>": {"id": "<s>", "ids": [N], "tokens": ["<s>"]},
                "</s>": {"id": "</s>", "ids": [N + 1], "tokens": ["</s>"]},
            },
        },
        decoder={"type": "Sequence", "decoders": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0},
        ]}),
    # NFKC then lowercase; "Hello" is matched in the normalized text (as "hello") and keeps its
    # vocabulary id, "ABC" only in the raw text.
    "nfkc_lowercase.json": tokenizer(
        byte_level(),
        [added("Hello", 271, normalized=True), added("ABC", N)],
        normalizer={"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]}),
    # Split with each behavior (a literal "-"), and an inverted regex.
    "split_isolated.json": tokenizer(then_bytes(split({"String": "-"}, "Isolated"))),
    "split_removed.json": tokenizer(then_bytes(split({"Regex": "\\s+"}, "Removed"))),
    "split_merged_previous.json": tokenizer(then_bytes(split({"String": "-"}, "MergedWithPrevious"))),
    "split_merged_next.json": tokenizer(then_bytes(split({"String": "-"}, "MergedWithNext"))),
    "split_contiguous.json": tokenizer(then_bytes(split({"String": "-"}, "Contiguous"))),
    "split_invert.json": tokenizer(then_bytes(split({"Regex": "\\p{L}+"}, "Removed", invert=True))),
    "digits.json": tokenizer(then_bytes({"type": "Digits", "individual_digits": True})),
    "digits_contiguous.json": tokenizer(then_bytes({"type": "Digits", "individual_digits": False})),
    "punctuation.json": tokenizer(then_bytes({"type": "Punctuation", "behavior": "Isolated"})),
    "punctuation_contiguous.json": tokenizer(then_bytes({"type": "Punctuation", "behavior": "Contiguous"})),
    "whitespace.json": tokenizer(then_bytes({"type": "Whitespace"})),
    "whitespace_split.json": tokenizer(then_bytes({"type": "WhitespaceSplit"})),
    # BLOOM's pre-tokenizer (its Oniguruma pattern holds a nested class) and special tokens.
    "bloom_style.json": tokenizer(
        then_bytes(split({"Regex": " ?[^(\\s|[.,!?…。，、।۔،])]+"}, "Isolated")),
        [added("<unk>", N, special=True), added("<s>", N + 1, special=True), added("</s>", N + 2, special=True),
         added("<pad>", N + 3, special=True)]),
    # Pre-tokenizers in sequence: numbers split off, digit by digit, then GPT-2's regex with a
    # prefix space on every piece.
    "sequence.json": tokenizer(sequence(split({"Regex": "\\p{N}+"}, "Isolated"),
                                        {"type": "Digits", "individual_digits": True},
                                        byte_level(add_prefix_space=True))),
    "sentencepiece_style.json": {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [special("<unk>", 0), special("<s>", 1), special("</s>", 2)],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing", "single": template("<s>", "$A"), "pair": template("<s>", "$A", "$B"),
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": bpe(["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(0x80)] + ["▁"] + LETTERS + [",", "."],
                     SENTENCEPIECE_MERGES, unk_token="<unk>", fuse_unk=True, byte_fallback=True),
    },
    "continuing_prefix.json": {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [special("[UNK]", 0), special("[CLS]", 1), special("[SEP]", 2)],
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 2], "cls": ["[CLS]", 1]},
        "decoder": None,
        "model": bpe(["[UNK]", "[CLS]", "[SEP]"] + LETTERS + ["##" + c for c in LETTERS] + [".", ",", "!"],
                     CONTINUING_MERGES, unk_token="[UNK]", continuing_subword_prefix="##"),
    },
    "end_of_word_suffix.json": {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [special("<unk>", 0), special("<s>", 1), special("</s>", 2)],
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "Lowercase"},
                                                           {"type": "Strip", "strip_left": True, "strip_right": True}]},
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 1], "trim_offsets": True,
                           "add_prefix_space": False},
        # (A Strip with stop > 0 after Fuse would make Hugging Face's library panic on an empty text.)
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "</w>"}, "content": " "},
            {"type": "Fuse"}]},
        "model": bpe(["<unk>", "<s>", "</s>"] + LETTERS + [c + "</w>" for c in LETTERS] + [".</w>", ",</w>", "!</w>", "cat"],
                     SUFFIX_MERGES, unk_token="<unk>", end_of_word_suffix="</w>", ignore_merges=True),
    },
    # BERT's WordPiece tokenizer.json (ids: WORDPIECE_VOCAB), as bert-base-uncased and
    # jina-embeddings-v2 ship it.
    "bert_wordpiece.json": {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [special(t, i) for i, t in enumerate(WORDPIECE_VOCAB[:5])],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing", "single": template("[CLS]", "$A", "[SEP]"),
                           "pair": template("[CLS]", "$A", "[SEP]") + [{"Sequence": {"id": "B", "type_id": 1}},
                                                                      {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
                           "special_tokens": {t: {"id": t, "ids": [WORDPIECE_VOCAB.index(t)], "tokens": [t]}
                                              for t in ("[CLS]", "[SEP]")}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": {t: i for i, t in enumerate(WORDPIECE_VOCAB)}},
    },
    # Hugging Face's ByteLevel normalizer: the byte-level characters before the split, a
    # normalized added token matched (and decoded) as its byte-level form "NewĠYork", and a
    # Sequence of post-processors adding an end token.
    "byte_level_normalizer.json": {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added("<|endoftext|>", N, special=True), added("New York", N + 1, normalized=True)],
        "normalizer": {"type": "ByteLevel"},
        "pre_tokenizer": split({"String": "Ġ"}, "MergedWithNext"),
        "post_processor": {"type": "Sequence", "processors": [
            byte_level(),
            {"type": "TemplateProcessing", "single": template("$A", "<|endoftext|>"),
             "pair": template("$A", "$B", "<|endoftext|>"),
             "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [N], "tokens": ["<|endoftext|>"]}}}]},
        "decoder": byte_level(),
        "model": model(),
    },
}


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name, document in FIXTURES.items():
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            json.dump(document, f, ensure_ascii=False, indent=1)
            f.write("\n")
    print("%d fixtures in %s (N = %d)" % (len(FIXTURES), out_dir, N))


if __name__ == "__main__":
    main()
