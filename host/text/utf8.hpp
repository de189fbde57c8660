#pragma once
// UTF-8 as the tokenizer needs it: stepping through code points, validating input text,
// replacing what is not UTF-8 by U+FFFD the way Rust's String::from_utf8_lossy (Hugging Face's
// decode) and the WHATWG decoder do, and finding where a stream of bytes stops being complete.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vkf::text {

// What starts at some byte of a byte string.
struct Utf8Step {
    enum class Kind {
        Char,       // a well-formed character of `size` bytes, `code_point`
        Invalid,    // `size` bytes (at least 1) that no continuation can make well-formed: one U+FFFD
        Truncated,  // the last `size` bytes begin a character the string ends inside
    };
    Kind kind;
    std::uint32_t size;
    char32_t code_point;
};

// The step at bytes[pos] (pos < bytes.size()). Invalid covers a maximal subpart of an ill-formed
// sequence (Unicode 15, section 3.9, "U+FFFD Substitution of Maximal Subparts").
Utf8Step utf8_step(std::string_view bytes, std::size_t pos);

// The code point starting at text[pos] of text known to be valid UTF-8, and its byte length.
struct Utf8Char {
    char32_t code_point;
    std::uint32_t size;
};
Utf8Char utf8_char(std::string_view text, std::size_t pos);

// Where the character that ends at byte `end` (> 0) of valid UTF-8 starts.
std::size_t utf8_previous(std::string_view text, std::size_t end);

// The offset of the first byte that is not part of well-formed UTF-8, or npos.
std::size_t find_invalid_utf8(std::string_view bytes);

void append_utf8(std::string& out, char32_t code_point);

// `bytes` with each maximal ill-formed subpart (and a truncated character at the end) replaced by
// U+FFFD.
std::string to_valid_utf8(std::string_view bytes);

// The length of the longest prefix of `bytes` that later bytes cannot change: all of it but a
// truncated character at the end.
std::size_t complete_utf8_prefix(std::string_view bytes);

}  // namespace vkf::text
