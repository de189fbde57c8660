#pragma once
// The Unicode properties and mappings the tokenizer components use, with the definitions of the
// Rust standard library that Hugging Face's tokenizers are built on. utf8proc (MIT, no data files)
// supplies the general categories, the normalization forms and the case mapping.

#include <string>
#include <string_view>

namespace vkf::text {

// Rust's char::is_whitespace: the White_Space property.
bool is_white_space(char32_t c);
// Where the run of White_Space that starts at byte `pos` of `text` (valid UTF-8) ends, and where
// the run that ends at byte `end` starts.
std::size_t skip_white_space(std::string_view text, std::size_t pos);
std::size_t white_space_before(std::string_view text, std::size_t end);
// Rust's char::is_numeric: general categories Nd, Nl and No.
bool is_numeric(char32_t c);
// The Punctuation pre-tokenizer's test: an ASCII punctuation character (which includes $+<=>^`|~)
// or general category P*.
bool is_punctuation(char32_t c);
// The `unicode_categories` crate's is_other, which BERT's text cleaning removes: general categories
// Cc, Cf and Co (not Cn or Cs).
bool is_control_format_or_private_use(char32_t c);
// General category Mn: the accents BERT's accent stripping removes after NFD.
bool is_nonspacing_mark(char32_t c);

enum class NormalForm { NFC, NFD, NFKC, NFKD };

// `text` (valid UTF-8) in the normal form.
std::string normalize(std::string_view text, NormalForm form);

// Every character of `text` (valid UTF-8) replaced by its full lowercase mapping, one character at
// a time as Rust's char::to_lowercase does (no context: a final capital sigma becomes σ).
std::string lowercase(std::string_view text);

}  // namespace vkf::text
