"""Byte-level BPE (GPT-2 style): a trainer, the encoder used for the training data, and a
writer of Hugging Face's tokenizer.json, all in plain Python.

Text -> ids:
  1. split into pre-tokens with the GPT-2 regex (PRETOKENIZE);
  2. map each pre-token's UTF-8 bytes to printable characters (byte_to_char: GPT-2's
     byte-to-unicode table, so every byte is one vocabulary symbol and no <unk> is needed);
  3. apply the learnt merges, always the lowest-ranked adjacent pair first, every occurrence
     left to right, until no adjacent pair has a rank;
  4. look each resulting symbol up in the vocabulary.
Special tokens are never produced by encode(); text that spells "</s>" is just bytes.
"""

import heapq
import json
from collections import Counter, defaultdict

import regex

PRETOKENIZE = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

# BLOOM's special tokens and ids.
SPECIALS = ("<unk>", "<s>", "</s>", "<pad>")


def byte_to_char():
    """GPT-2's table: bytes that are printable Latin-1 map to themselves, the other 68 to
    chr(256), chr(257), ... in byte order (so space is 'Ġ' and newline 'Ċ')."""
    keep = set(range(ord("!"), ord("~") + 1)) | set(range(ord("¡"), ord("¬") + 1)) | set(range(ord("®"), ord("ÿ") + 1))
    table, shifted = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + shifted)
            shifted += 1
    return table


BYTE_TO_CHAR = byte_to_char()
CHAR_TO_BYTE = {c: b for b, c in BYTE_TO_CHAR.items()}


def to_symbols(pretoken):
    return [BYTE_TO_CHAR[b] for b in pretoken.encode("utf-8")]


def train(text, vocab_size):
    """(vocab {token: id}, merges [(left, right)]) learnt from `text`'s pre-token counts.
    Ids: the specials, then the 256 byte symbols in byte order, then merged tokens in the
    order they were learnt. Each step merges the most frequent adjacent pair; equal counts
    go to the lexicographically smallest (left, right), so training is deterministic."""
    vocab = {s: i for i, s in enumerate(SPECIALS)}
    for b in range(256):
        vocab[BYTE_TO_CHAR[b]] = len(vocab)
    counts = Counter(PRETOKENIZE.findall(text))
    words = [to_symbols(w) for w in counts]
    freq = list(counts.values())

    pair_count = defaultdict(int)
    pair_words = defaultdict(set)  # pair -> indices of the words that contain it
    for i, symbols in enumerate(words):
        for pair in zip(symbols, symbols[1:]):
            pair_count[pair] += freq[i]
            pair_words[pair].add(i)
    # A max-heap by count with stale entries skipped on pop (cheaper than a max() per step).
    heap = [(-c, p) for p, c in pair_count.items()]
    heapq.heapify(heap)

    merges = []
    while len(vocab) < vocab_size and heap:
        neg, pair = heapq.heappop(heap)
        if pair_count.get(pair, 0) != -neg or -neg <= 0:
            continue
        merged = pair[0] + pair[1]
        assert merged not in SPECIALS
        merges.append(pair)
        # Two different merges can spell the same string; the token keeps its first id.
        vocab.setdefault(merged, len(vocab))
        changed = set()
        for i in pair_words.pop(pair):
            old = words[i]
            for p in zip(old, old[1:]):
                pair_count[p] -= freq[i]
                changed.add(p)
            new = merge_pair(old, pair, merged)
            for p in zip(new, new[1:]):
                pair_count[p] += freq[i]
                changed.add(p)
            for p in set(zip(old, old[1:])) - set(zip(new, new[1:])):
                pair_words[p].discard(i)
            for p in zip(new, new[1:]):
                pair_words[p].add(i)
            words[i] = new
        pair_count.pop(pair, None)
        for p in changed:
            c = pair_count.get(p, 0)
            if c > 0:
                heapq.heappush(heap, (-c, p))
            else:
                pair_count.pop(p, None)
    return vocab, merges


def merge_pair(symbols, pair, merged):
    """symbols with every occurrence of `pair` replaced by `merged`, left to right."""
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == pair[0] and symbols[i + 1] == pair[1]:
            out.append(merged)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


class Tokenizer:
    def __init__(self, vocab, merges):
        self.vocab = vocab
        self.id_to_token = {i: t for t, i in vocab.items()}
        self.ranks = {tuple(p): r for r, p in enumerate(merges)}
        self.merges = [tuple(p) for p in merges]
        self._cache = {}  # pre-token -> ids; the corpus repeats its words a lot

    def _bpe(self, pretoken):
        symbols = to_symbols(pretoken)
        while len(symbols) > 1:
            ranked = [(self.ranks.get(p), p) for p in zip(symbols, symbols[1:])]
            ranked = [rp for rp in ranked if rp[0] is not None]
            if not ranked:
                break
            pair = min(ranked)[1]
            symbols = merge_pair(symbols, pair, pair[0] + pair[1])
        return [self.vocab[s] for s in symbols]

    def encode(self, text):
        ids = []
        for pretoken in PRETOKENIZE.findall(text):
            cached = self._cache.get(pretoken)
            if cached is None:
                cached = self._cache[pretoken] = self._bpe(pretoken)
            ids.extend(cached)
        return ids

    def decode(self, ids):
        """Specials are dropped; invalid UTF-8 (a cut multi-byte character) becomes U+FFFD."""
        data = bytearray()
        for i in ids:
            token = self.id_to_token[i]
            if token not in SPECIALS:
                data.extend(CHAR_TO_BYTE[c] for c in token)
        return data.decode("utf-8", errors="replace")

    def to_hf_json(self):
        """Hugging Face tokenizers' tokenizer.json for this vocabulary."""
        byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
        return {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [
                {"id": self.vocab[s], "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                 "normalized": False, "special": True}
                for s in SPECIALS
            ],
            "normalizer": None,
            "pre_tokenizer": byte_level,
            "post_processor": None,
            "decoder": byte_level,
            "model": {
                "type": "BPE",
                "dropout": None,
                "unk_token": None,
                "continuing_subword_prefix": None,
                "end_of_word_suffix": None,
                "fuse_unk": False,
                "byte_fallback": False,
                "ignore_merges": False,
                "vocab": self.vocab,
                # The classic "left right" strings: byte-level symbols never contain a space.
                "merges": [f"{a} {b}" for a, b in self.merges],
            },
        }

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_hf_json(), f, ensure_ascii=False, indent=1)
            f.write("\n")

    @staticmethod
    def load(path):
        with open(path, encoding="utf-8") as f:
            model = json.load(f)["model"]
        return Tokenizer(model["vocab"], [m.split(" ") for m in model["merges"]])
