// UTF-8 for the tokenizer: every code point round-trips, ill-formed input is found at its first
// bad byte, replacement follows "U+FFFD substitution of maximal subparts" (Rust's
// from_utf8_lossy, which Hugging Face's decode uses), and a stream's incomplete last character is
// held back.

#include "host/text/utf8.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vkf::text {
namespace {

const std::string kReplacement = "\xEF\xBF\xBD";

TEST(TextUtf8, EveryCodePointRoundTrips) {
    for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            continue;
        }
        std::string s;
        append_utf8(s, cp);
        ASSERT_EQ(find_invalid_utf8(s), std::string::npos) << std::hex << static_cast<unsigned>(cp);
        const Utf8Char c = utf8_char(s, 0);
        ASSERT_EQ(c.code_point, cp);
        ASSERT_EQ(c.size, s.size());
        ASSERT_EQ(s.size(), cp < 0x80 ? 1u : cp < 0x800 ? 2u : cp < 0x10000 ? 3u : 4u);
    }
}

TEST(TextUtf8, FindsTheFirstIllFormedByte) {
    const std::vector<std::pair<std::string, std::size_t>> cases = {
        {"abc", std::string::npos},
        {"ab\xFF", 2},
        {"\x80", 0},                  // a continuation byte alone
        {"a\xC0\x80", 1},             // overlong NUL
        {"a\xC1\xBF", 1},             // overlong
        {"\xE0\x80\x80", 0},          // overlong 3 bytes
        {"\xED\xA0\x80", 0},          // a surrogate
        {"\xF4\x90\x80\x80", 0},      // above U+10FFFF
        {"\xF5\x80\x80\x80", 0},      // never a lead byte
        {"x\xE2\x82", 1},             // truncated at the end
        {"\xE2\x82\xAC\xE2\x82", 3},  // a euro sign, then a truncated one
        {"\xF0\x9F\x99\x82", std::string::npos},
    };
    for (const auto& [bytes, offset] : cases) {
        EXPECT_EQ(find_invalid_utf8(bytes), offset) << ::testing::PrintToString(bytes);
    }
}

TEST(TextUtf8, ReplacesMaximalSubparts) {
    // The examples of Unicode 15 section 3.9 (table 3-8) and the WHATWG encoding standard.
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"a\x80"
         "b",
         "a" + kReplacement + "b"},
        {"\xE2\x82", kReplacement},  // a truncated sequence is one U+FFFD
        {"\xE2\x82"
         "A",
         kReplacement + "A"},
        {"\xF0\x9F\x99", kReplacement},
        {"\xF0\x9F\x99\xF0\x9F\x99\x82", kReplacement + "\xF0\x9F\x99\x82"},
        {"\xC0\xAF", kReplacement + kReplacement},  // C0 never starts a sequence
        {"\xE0\x80\xAF", kReplacement + kReplacement + kReplacement},
        {"\xED\xA0\x80", kReplacement + kReplacement + kReplacement},
        {"\xF4\x90\x80\x80", kReplacement + kReplacement + kReplacement + kReplacement},
        {"\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64", "a" + kReplacement + kReplacement + kReplacement +
                                                                     "b" + kReplacement + "c" + kReplacement +
                                                                     kReplacement + "d"},
        {"valid \xC3\xA9", "valid \xC3\xA9"},
    };
    for (const auto& [bytes, expected] : cases) {
        EXPECT_EQ(to_valid_utf8(bytes), expected) << ::testing::PrintToString(bytes);
    }
}

TEST(TextUtf8, CompletePrefixHoldsBackOnlyATruncatedCharacter) {
    EXPECT_EQ(complete_utf8_prefix(""), 0u);
    EXPECT_EQ(complete_utf8_prefix("abc"), 3u);
    EXPECT_EQ(complete_utf8_prefix("ab\xE2"), 2u);
    EXPECT_EQ(complete_utf8_prefix("ab\xE2\x82"), 2u);
    EXPECT_EQ(complete_utf8_prefix("ab\xE2\x82\xAC"), 5u);
    EXPECT_EQ(complete_utf8_prefix("\xF0\x9F\x99"), 0u);
    EXPECT_EQ(complete_utf8_prefix("ab\xFF"), 3u);  // invalid, not incomplete: no byte can mend it
    EXPECT_EQ(complete_utf8_prefix("ab\xE2"
                                   "A"),
              4u);                                      // a truncated character followed by more
    EXPECT_EQ(complete_utf8_prefix("ab\xE0\x80"), 4u);  // E0 80 can never become well-formed
    // Replacing the complete prefix and the rest apart gives what replacing the whole gives.
    const std::string bytes = "a\xE2\x82\xAC\xF0\x9F\x99";
    const std::size_t cut = complete_utf8_prefix(bytes);
    EXPECT_EQ(to_valid_utf8(bytes.substr(0, cut)) + to_valid_utf8(bytes.substr(cut)), to_valid_utf8(bytes));
}

}  // namespace
}  // namespace vkf::text
