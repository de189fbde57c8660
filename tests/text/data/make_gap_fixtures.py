#!/usr/bin/env python3
"""Writes bpe_gaps.json and wordpiece_gaps.json (issue 32): byte_bpe.json and bert_wordpiece.json
with model.vocab ids that skip numbers, as vocabularies converted from other formats do: ids
from 10 on move to id + 1000 + (id % 7) * 50000, so gaps lie inside and past the entry count.
Added tokens that are in the vocabulary keep its id; wordpiece_gaps.json adds [NEW], not in
it, which Hugging Face numbers from the entry count (59; the tokenizers npm binding agrees).
hf_tokenizers_test.py compares both with Hugging Face's Rust library and tokenizers.js."""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def with_gaps(source, target, extra_added):
    with open(os.path.join(HERE, source), encoding="utf-8") as f:
        doc = json.load(f)
    vocab = {k: (i if i < 10 else i + 1000 + (i % 7) * 50000) for k, i in doc["model"]["vocab"].items()}
    assert len(set(vocab.values())) == len(vocab)
    doc["model"]["vocab"] = vocab
    for token in doc.get("added_tokens") or []:
        token["id"] = vocab.get(token["content"], token["id"])
    doc["added_tokens"] = (doc.get("added_tokens") or []) + extra_added
    with open(os.path.join(HERE, target), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")


with_gaps("byte_bpe.json", "bpe_gaps.json", [])
with_gaps("bert_wordpiece.json", "wordpiece_gaps.json",
          [{"id": 59, "content": "[NEW]", "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}])
