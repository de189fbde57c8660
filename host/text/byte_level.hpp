#pragma once
// GPT-2's byte-level alphabet, shared by the ByteLevel pre-tokenizer, normalizer and decoder:
// every byte is written as one printable character so that a vocabulary of strings can hold any
// byte sequence. Bytes that are printable Latin-1 ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) stand for
// themselves; the other 68 become U+0100, U+0101, ... in byte order (a space is 'Ġ' U+0120, a
// newline 'Ċ' U+010A).

#include <optional>
#include <string>
#include <string_view>

namespace vkf::text {

// The character byte `b` is written as, in UTF-8.
std::string_view byte_level_char(unsigned char b);

// Every byte of `bytes` as its character.
std::string to_byte_level(std::string_view bytes);

// The bytes a byte-level string stands for; nullopt when a character of `text` (valid UTF-8) is
// not in the alphabet.
std::optional<std::string> from_byte_level(std::string_view text);

}  // namespace vkf::text
