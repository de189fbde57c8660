#pragma once
// Text handed to a tokenizer, checked as UTF-8 where the user can find the fault: the message
// names where the text came from (--prompt, a file's path, standard input) and the byte,
// rather than the tokenizer.json that was asked to encode it.

#include <cstddef>
#include <string_view>

namespace vkf::app {

// Throws vkf::Error "<source>: not valid UTF-8 at byte N (0xNN)" unless `text` is UTF-8.
// `offset` is where `text` starts in its source (a line of a file or of stdin).
void check_utf8(std::string_view text, std::string_view source, std::size_t offset = 0);

// Drops one trailing '\r' (a line of a file written on Windows).
std::string_view without_cr(std::string_view line);

}  // namespace vkf::app
