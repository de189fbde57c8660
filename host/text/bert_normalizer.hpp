#pragma once
// BERT's text normalization (Hugging Face's normalizers::bert, the BertNormalizer of BERT-style
// tokenizer.json files), in this order:
//   - clean_text: NUL, U+FFFD and the characters of categories Cc, Cf and Co are removed, except
//     tab, newline and carriage return, which with every White_Space character become a space;
//   - handle_chinese_chars: a space on each side of every CJK ideograph (is_bert_chinese_char), so
//     that each becomes a word of its own;
//   - strip_accents: NFD, then the nonspacing marks (Mn) removed;
//   - lowercase: every character's full lowercase mapping (unicode.hpp).

#include "host/text/normalizers.hpp"

#include <memory>

namespace vkf::text {

struct BertNormalizerOptions {
    bool clean_text = true;
    bool handle_chinese_chars = true;
    // tokenizer.json's null means "as lowercase"; the parser resolves it.
    bool strip_accents = true;
    bool lowercase = true;
};

std::unique_ptr<Normalizer> make_bert_normalizer(BertNormalizerOptions options);

// The code points BERT treats as Chinese characters: the CJK Unified Ideographs blocks and their
// extensions A to E and the compatibility ideographs, with the bounds Hugging Face's code has
// (its extension E range starts at U+2B920, not U+2B820: U+2B820..U+2B91F are not split off).
bool is_bert_chinese_char(char32_t c);

}  // namespace vkf::text
