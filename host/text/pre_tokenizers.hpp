#pragma once
// Pre-tokenizers: how a tokenizer cuts normalized text into the pieces ("words") the model
// encodes one by one (Hugging Face's pre_tokenizers), applied to each stretch of text between
// added tokens.

#include "host/text/regex.hpp"
#include "host/text/split.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::text {

class PreTokenizer {
public:
    virtual ~PreTokenizer() = default;
    // Appends the pieces of `text` (valid UTF-8, not empty) to `out`; no piece is empty.
    virtual void pre_tokenize(std::string_view text, std::vector<std::string>& out) const = 0;
};

// GPT-2's pattern, which ByteLevel splits with (in Oniguruma's syntax).
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// ByteLevel: a space put in front unless the text starts with one (add_prefix_space), the pieces
// of kGpt2Pattern kept apart (use_regex), every byte written as its byte-level character.
std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex);
// Split: the segments of `pattern` under `behavior`, matches and non-matches swapped by `invert`.
std::unique_ptr<PreTokenizer> make_split_pre_tokenizer(Regex pattern, SplitBehavior behavior, bool invert);
// Digits: every numeric character (Nd, Nl, No) apart (individual_digits) or runs of them.
std::unique_ptr<PreTokenizer> make_digits_pre_tokenizer(bool individual_digits);
// Punctuation: punctuation characters (unicode.hpp) split off under `behavior`.
std::unique_ptr<PreTokenizer> make_punctuation_pre_tokenizer(SplitBehavior behavior);
// Whitespace: runs of word characters and runs of other non-space characters (Rust's regex
// \w+|[^\w\s]+), spaces dropped.
std::unique_ptr<PreTokenizer> make_whitespace_pre_tokenizer();
// WhitespaceSplit: split on White_Space, which is dropped.
std::unique_ptr<PreTokenizer> make_whitespace_split_pre_tokenizer();
// BertPreTokenizer: split on White_Space, which is dropped, then every punctuation character
// (unicode.hpp's is_punctuation, which is BERT's: ASCII punctuation or P*) a piece of its own.
std::unique_ptr<PreTokenizer> make_bert_pre_tokenizer();
// Sequence: each in order, on every piece the previous one made.
std::unique_ptr<PreTokenizer> make_sequence_pre_tokenizer(std::vector<std::unique_ptr<PreTokenizer>> pre_tokenizers);

}  // namespace vkf::text
