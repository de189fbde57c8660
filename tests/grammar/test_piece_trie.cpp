// The token mask over a trie of the pieces (Matcher::allowed_tokens(const PieceTrie&), what
// generation uses) against the piece-by-piece mask, at every step of a JSON document fed in
// pieces: shared prefixes, UTF-8 split over pieces, empty pieces, duplicate pieces. And
// TokenConstraint's end-of-text rule.

#include "base/error.hpp"
#include "host/grammar/json_schema.hpp"
#include "host/grammar/matcher.hpp"
#include "host/grammar/piece_trie.hpp"
#include "host/grammar/token_constraint.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vkf::grammar {
namespace {

std::vector<std::string> vocabulary() {
    std::vector<std::string> v{"",     "{",  "{\"", "\"",   "\":",  "a",    "ab",       "abc",      "ab",
                               "1",    "12", "1.",  ".5",   "}",    "]",    "[",        ",",        " ",
                               "null", "nu", "n",   "true", "\xC3", "\xA9", "\xC3\xA9", "\xE2\x82", "\xAC",
                               "\xE2", "\\", "\\u", "00e9", "x\"",  "\xFF", "\"}"};
    return v;
}

TEST(PieceTrie, MaskEqualsThePieceByPieceMask) {
    const Grammar g = parse_gbnf(json_object_gbnf());
    const std::vector<std::string> pieces = vocabulary();
    const PieceTrie trie(pieces);
    Matcher m(g);
    const std::vector<std::string> document{"{\"",  "ab", "\":", " ",    "[",    "12",       ",",    "1.",
                                            "12",   ",",  "\"",  "\xC3", "\xA9", "\xE2\x82", "\xAC", "\\u",
                                            "00e9", "\"", ",",   "null", "]",    "}"};
    for (const std::string& piece : document) {
        EXPECT_EQ(m.allowed_tokens(trie), m.allowed_tokens(pieces)) << "before " << piece;
        ASSERT_TRUE(m.accept(piece)) << piece;
    }
    EXPECT_TRUE(m.complete());
    EXPECT_EQ(m.allowed_tokens(trie), m.allowed_tokens(pieces));
}

TEST(TokenConstraint, EndOfTextOnlyWhenComplete) {
    auto c = std::make_shared<Constraint>(
        Constraint{.grammar = parse_gbnf(R"(root ::= "a"+)"),
                   .pieces = std::make_shared<const PieceTrie>(std::vector<std::string>{"a", "b", "", "aa"})});
    TokenConstraint t(c);
    const std::uint32_t end[] = {2};
    EXPECT_EQ(t.mask(5, end), (std::vector<std::uint8_t>{1, 0, 0, 1, 0}));
    t.accept(0);
    EXPECT_EQ(t.mask(5, end), (std::vector<std::uint8_t>{1, 0, 1, 1, 0}));
    EXPECT_THROW(t.accept(1), Error);
    EXPECT_THROW(t.accept(7), Error);
}

}  // namespace
}  // namespace vkf::grammar
