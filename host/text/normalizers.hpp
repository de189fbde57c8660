#pragma once
// Normalizers: what a tokenizer does to the text before splitting it (Hugging Face's
// normalizers), applied to each stretch of text between added tokens.

#include "host/text/regex.hpp"
#include "host/text/unicode.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::text {

class Normalizer {
public:
    virtual ~Normalizer() = default;
    // `text` is valid UTF-8, and so is the result.
    virtual std::string normalize(std::string_view text) const = 0;
};

// NFC, NFD, NFKC, NFKD.
std::unique_ptr<Normalizer> make_unicode_normalizer(NormalForm form);
// Lowercase: every character's full lowercase mapping (unicode.hpp).
std::unique_ptr<Normalizer> make_lowercase_normalizer();
// Strip: White_Space removed from the left and/or right end.
std::unique_ptr<Normalizer> make_strip_normalizer(bool left, bool right);
// Prepend: `prefix` put in front of a text that is not empty.
std::unique_ptr<Normalizer> make_prepend_normalizer(std::string prefix);
// Replace: every match of `pattern` (find_all's matches) replaced by `content`.
std::unique_ptr<Normalizer> make_replace_normalizer(Regex pattern, std::string content);
// ByteLevel: every byte written as its byte-level character (byte_level.hpp).
std::unique_ptr<Normalizer> make_byte_level_normalizer();
// Sequence: each in order.
std::unique_ptr<Normalizer> make_sequence_normalizer(std::vector<std::unique_ptr<Normalizer>> normalizers);

}  // namespace vkf::text
