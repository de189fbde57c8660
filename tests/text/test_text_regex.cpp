// The tokenizer's regular expressions: Oniguruma patterns rewritten for PCRE2 so they match what
// Oniguruma matches (\s is White_Space, \w Unicode's word characters, nested classes are unions),
// Oniguruma's and Rust's find_iter (empty matches, never one right after a match), and patterns
// PCRE2 cannot compile refused with its message and offset.

#include "base/error.hpp"
#include "host/text/pre_tokenizers.hpp"
#include "host/text/regex.hpp"
#include "tests/support/test_support.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vkf::text {
namespace {

using vkf::test::error_message;

// The matched substrings.
std::vector<std::string> matches(const Regex& regex, std::string_view text) {
    std::vector<Regex::Match> found;
    regex.find_all(text, found);
    std::vector<std::string> out;
    for (const Regex::Match& m : found) {
        out.emplace_back(text.substr(m.begin, m.end - m.begin));
    }
    return out;
}

std::vector<std::pair<std::size_t, std::size_t>> ranges(const Regex& regex, std::string_view text) {
    std::vector<Regex::Match> found;
    regex.find_all(text, found);
    std::vector<std::pair<std::size_t, std::size_t>> out;
    for (const Regex::Match& m : found) {
        out.emplace_back(m.begin, m.end);
    }
    return out;
}

TEST(TextRegex, RewritesOnigurumaConstructs) {
    EXPECT_EQ(oniguruma_to_pcre2(R"(\s+(?!\S))"), R"(\p{White_Space}+(?!\P{White_Space}))");
    EXPECT_EQ(oniguruma_to_pcre2(R"([^\s\p{L}])"), R"([^\p{White_Space}\p{L}])");
    EXPECT_EQ(oniguruma_to_pcre2(R"(\d\D\h)"), R"(\p{Nd}\P{Nd}[0-9A-Fa-f])");
    EXPECT_EQ(oniguruma_to_pcre2(R"(\u00e9\x{1F600}\\s)"), R"(\x{00e9}\x{1F600}\\s)");
    EXPECT_EQ(oniguruma_to_pcre2(R"(a{,3}b{2,})"), R"(a{0,3}b{2,})");
    EXPECT_EQ(oniguruma_to_pcre2("(?m:.)(?i:'s)(?:x)"), "(?s:.)(?i:'s)(?:x)");
    // BLOOM's pattern: a class nested in a class is a union.
    EXPECT_EQ(oniguruma_to_pcre2(" ?[^(\\s|[.,!?…。，、।۔،])]+"), " ?[^(\\p{White_Space}|.,!?…。，、।۔،)]+");
    EXPECT_EQ(oniguruma_to_pcre2("[]a]"), "[\\]a]");
    EXPECT_EQ(oniguruma_to_pcre2("[[:alpha:]x]"), "[[:alpha:]x]");
    EXPECT_EQ(oniguruma_to_pcre2(R"([\w-])"), R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}-])");
}

TEST(TextRegex, RefusesWhatHasNoPcre2Spelling) {
    EXPECT_NE(error_message([] { oniguruma_to_pcre2("[a[^b]]"); }).find("negated class inside"), std::string::npos);
    EXPECT_NE(error_message([] { oniguruma_to_pcre2("[a-z&&[^aeiou]]"); }).find("intersection (&&)"),
              std::string::npos);
    EXPECT_NE(error_message([] { oniguruma_to_pcre2(R"([\W])"); }).find("\\W inside a character class"),
              std::string::npos);
    EXPECT_NE(error_message([] { Regex::from_oniguruma("[a[^b]]", "test.json: x"); })
                  .find("test.json: x: cannot compile '[a[^b]]': a negated class inside a character class is not "
                        "supported at offset 2"),
              std::string::npos);
}

TEST(TextRegex, BadPatternsAreRefusedWithPcre2sMessageAndOffset) {
    const std::string unclosed = error_message([] { Regex::from_oniguruma("(ab", "tokenizer.json: pattern.Regex"); });
    EXPECT_EQ(unclosed, "tokenizer.json: pattern.Regex: cannot compile '(ab': missing closing parenthesis at offset 3");
    const std::string quantifier = error_message([] { Regex::from_oniguruma("a{2,1}", "p"); });
    EXPECT_NE(quantifier.find("numbers out of order in {} quantifier at offset 5"), std::string::npos) << quantifier;
    // Where the rewriting changed the pattern, the offset is in its PCRE2 form, which is quoted.
    const std::string rewritten = error_message([] { Regex::from_oniguruma(R"(\s(?<=a+))", "p"); });
    EXPECT_NE(rewritten.find("of its PCRE2 form '\\p{White_Space}(?<=a+)'"), std::string::npos) << rewritten;
}

TEST(TextRegex, ClassesMeanWhatOnigurumaMeans) {
    const Regex space = Regex::from_oniguruma(R"(\s)", "p");
    EXPECT_EQ(matches(space, "a\u0085b\u00a0c\u2028d\u3000e"),
              (std::vector<std::string>{"\u0085", "\u00a0", "\u2028", "\u3000"}));
    EXPECT_TRUE(matches(space, "\u180e\ufeff\u200b").empty());  // not White_Space (PCRE2's \s takes U+180E)
    const Regex word = Regex::from_oniguruma(R"(\w+)", "p");
    // Combining marks and connector punctuation are word characters; No (²) is not.
    EXPECT_EQ(matches(word, "e\u0301t\u203Fu x\u00b2"), (std::vector<std::string>{"e\u0301t\u203Fu", "x"}));
    const Regex boundary = Regex::from_oniguruma(R"(\bab)", "p");
    EXPECT_EQ(ranges(boundary, "ab xab \u0301ab"), (std::vector<std::pair<std::size_t, std::size_t>>{{0, 2}}));
    // ^ and $ at line starts and ends, as in Ruby's syntax.
    EXPECT_EQ(matches(Regex::from_oniguruma("^a", "p"), "ab\nab"), (std::vector<std::string>{"a", "a"}));
    // The nested class of BLOOM's pattern: '(' '|' ')' and the listed punctuation are excluded.
    const Regex bloom = Regex::from_oniguruma(" ?[^(\\s|[.,!?…。，、।۔،])]+", "p");
    EXPECT_EQ(matches(bloom, "Hello, world. (x)…日本。"), (std::vector<std::string>{"Hello", " world", "x", "日本"}));
}

TEST(TextRegex, FindAllFollowsOnigurumasFindIter) {
    // An empty match right after a match is skipped; elsewhere empty matches count.
    const Regex stars = Regex::from_oniguruma("a*", "p");
    EXPECT_EQ(ranges(stars, "baab"), (std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {1, 3}, {4, 4}}));
    const Regex empty = Regex::from_oniguruma("", "p");
    EXPECT_EQ(ranges(empty, "ab"), (std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {1, 1}, {2, 2}}));
    // Skipping moves by a character, not a byte.
    EXPECT_EQ(ranges(empty, "é"), (std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {2, 2}}));
    // Lookbehind sees the text before the search's start.
    const Regex after_a = Regex::from_oniguruma("(?<=a)b", "p");
    EXPECT_EQ(ranges(after_a, "abab"), (std::vector<std::pair<std::size_t, std::size_t>>{{1, 2}, {3, 4}}));
}

TEST(TextRegex, Gpt2PatternPieces) {
    const Regex gpt2 = Regex::from_oniguruma(kGpt2Pattern, "p");
    EXPECT_EQ(matches(gpt2, "Hello world, it's 2024!  Tabs\tand   spaces \n\nend"),
              (std::vector<std::string>{"Hello", " world", ",", " it", "'s", " 2024", "!", " ", " Tabs", "\t", "and",
                                        "  ", " spaces", " \n", "\n", "end"}));
    EXPECT_EQ(matches(gpt2, "日本語 ٣٤ x\u0301y"), (std::vector<std::string>{"日本語", " ٣٤", " x", "\u0301", "y"}));
}

TEST(TextRegex, LiteralsAndAnchoredMatches) {
    const Regex literal = Regex::literal("a.b(", "p");
    EXPECT_EQ(matches(literal, "a.b(axb(a.b("), (std::vector<std::string>{"a.b(", "a.b("}));
    const Regex word = Regex::from_pcre2(R"([\p{Alphabetic}])", "p");
    EXPECT_TRUE(word.matches_at("1é", 1));
    EXPECT_FALSE(word.matches_at("é1", 2));
    EXPECT_EQ(word.pattern(), R"([\p{Alphabetic}])");
}

}  // namespace
}  // namespace vkf::text
