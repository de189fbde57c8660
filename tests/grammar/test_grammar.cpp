// GBNF parsing and matching (host/grammar): the flat rules of small grammars, the refusals
// with where they are, a JSON grammar over valid and broken documents, UTF-8 split over pieces,
// token masks, and the matcher's pushdown walk against a memoized recursive-descent oracle
// written here, on seeded random strings over several grammars: every prefix the matcher
// accepts is one some sentence starts with, and it calls a string complete exactly when the
// oracle derives it.

#include "base/error.hpp"
#include "host/grammar/grammar.hpp"
#include "host/grammar/matcher.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>

namespace vkf::grammar {
namespace {

std::string refusal(std::string_view text) {
    try {
        parse_gbnf(text);
    } catch (const Error& e) {
        return e.what();
    }
    return "(parsed)";
}

bool matches_whole(const Grammar& g, std::string_view text) {
    Matcher m(g);
    return m.accept(text) && m.complete();
}

TEST(Gbnf, FlatRules) {
    const Grammar g = parse_gbnf("root ::= \"ab\" [c-e_] | x # a comment\nx ::= [^z] .\n");
    ASSERT_EQ(g.names, (std::vector<std::string>{"root", "x"}));
    EXPECT_EQ(g.root, 0u);
    EXPECT_EQ(g.rules[0], (std::vector<Element>{{Op::Char, 'a'},
                                                {Op::Char, 'b'},
                                                {Op::Char, 'c'},
                                                {Op::CharRangeUpper, 'e'},
                                                {Op::CharAlt, '_'},
                                                {Op::Alt, 0},
                                                {Op::RuleRef, 1},
                                                {Op::End, 0}}));
    EXPECT_EQ(g.rules[1], (std::vector<Element>{{Op::CharNot, 'z'}, {Op::CharAny, 0}, {Op::End, 0}}));
}

TEST(Gbnf, RefusalsSayWhatAndWhere) {
    EXPECT_EQ(refusal("root ::= \"ab"),
              "grammar: line 1, column 13: the text ends inside a literal or a character class");
    EXPECT_EQ(refusal("root ::= x"), "grammar: rule 'x' is used but not defined");
    EXPECT_EQ(refusal("start ::= \"a\""), "grammar: no rule 'root' to start from");
    EXPECT_EQ(refusal("root ::= \"a\"\nroot ::= \"b\""), "grammar: line 2, column 10: rule 'root' is defined twice");
    EXPECT_EQ(refusal("root \"a\""), "grammar: line 1, column 6: expected '::=' after the rule name 'root'");
    EXPECT_EQ(refusal("root ::= []"), "grammar: line 1, column 11: an empty character class");
    EXPECT_EQ(refusal("root ::= [z-a]"), "grammar: line 1, column 14: the range U+7A-U+61 is empty");
    EXPECT_EQ(refusal("root ::= \"\\q\""), "grammar: line 1, column 12: unknown escape '\\q'");
    EXPECT_EQ(refusal("root ::= * \"a\""), "grammar: line 1, column 10: '*' repeats nothing");
    EXPECT_EQ(refusal("root ::= \"a\"{3,1}"), "grammar: line 1, column 18: the repetition {3,1} allows nothing");
    EXPECT_NE(refusal("root ::= \"a\"{99999}").find("a repetition count over 10000"), std::string::npos);
    EXPECT_NE(refusal("root ::= (\"a\" ").find("expected ')'"), std::string::npos);
    EXPECT_NE(refusal("root ::= \"\\uD8\"").find("expected 4 hexadecimal digits"), std::string::npos);
    EXPECT_NE(refusal("root ::= \"\xC3\"").find("invalid UTF-8"), std::string::npos);
    EXPECT_NE(refusal("root ::= root \"a\" | \"b\"").find("rule 'root' is left-recursive"), std::string::npos);
    EXPECT_NE(refusal("root ::= x \"a\"\nx ::= \"\" | root").find("left-recursive"), std::string::npos);
    EXPECT_NE(refusal("root ::= (\"a\"?)*").find("left-recursive"), std::string::npos);
}

TEST(Gbnf, RepetitionCounts) {
    const Grammar g = parse_gbnf("root ::= \"x\" [0-9]{2,4} \"y\"? ( \"-\" [a-b] ){1,} \"!\"*");
    EXPECT_TRUE(matches_whole(g, "x12-a"));
    EXPECT_TRUE(matches_whole(g, "x1234y-a-b-b!!!"));
    EXPECT_FALSE(matches_whole(g, "x1-a")) << "fewer than 2 digits";
    EXPECT_FALSE(matches_whole(g, "x12345-a")) << "more than 4 digits";
    EXPECT_FALSE(matches_whole(g, "x12y")) << "no group";
    EXPECT_FALSE(matches_whole(g, "x12yy-a"));
    const Grammar exact = parse_gbnf("root ::= [ab]{3}");
    EXPECT_TRUE(matches_whole(exact, "aba"));
    EXPECT_FALSE(matches_whole(exact, "ab"));
    EXPECT_FALSE(matches_whole(exact, "abab"));
}

constexpr std::string_view kJson = R"(
root   ::= value
value  ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array  ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\""
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
ws     ::= [ \t\n]*
)";

TEST(Matcher, JsonDocuments) {
    const Grammar g = parse_gbnf(kJson);
    for (std::string_view good :
         {R"({"a": [1, -2.5e3, true, null], "b\n": {"c": "\u00e9t\u00e9"}})", "[]", "0", R"("héllo ☃ 𝄞")", "{ }"}) {
        EXPECT_TRUE(matches_whole(g, good)) << good;
    }
    for (std::string_view bad : {R"({"a" 1})", "[1,]", "01", R"("tab	inside")", "{", "tru"}) {
        EXPECT_FALSE(matches_whole(g, bad)) << bad;
    }
    // The matcher stops at the first byte no sentence continues with, and keeps its state.
    Matcher m(g);
    ASSERT_TRUE(m.accept("{\"key\": "));
    EXPECT_FALSE(m.complete());
    EXPECT_FALSE(m.accept("}"));
    EXPECT_TRUE(m.accept("[1"));
    EXPECT_TRUE(m.allows("]}"));
    EXPECT_FALSE(m.allows("]]"));
    EXPECT_TRUE(m.accept("]}"));
    EXPECT_TRUE(m.complete());
}

TEST(Matcher, CodePointsSplitOverPieces) {
    const Grammar g = parse_gbnf("root ::= [α-ω]+ \"☃\"");
    Matcher m(g);
    const std::string snowman = "☃";  // E2 98 83
    EXPECT_TRUE(m.accept("\xCE"));    // the first byte of α (CE B1)
    EXPECT_FALSE(m.complete()) << "a code point is open";
    EXPECT_TRUE(m.accept("\xB1\xCE\xB2"));
    EXPECT_FALSE(m.allows("a"));
    EXPECT_TRUE(m.allows("\xCE")) << "the first byte of another Greek letter";
    EXPECT_FALSE(
        m.allows("\xCE"
                 "a"))
        << "CE then a byte that is no continuation";
    EXPECT_FALSE(m.allows("\xE0\x80\xB1")) << "an overlong α";
    EXPECT_FALSE(m.allows("\xED\xA0\x80")) << "a surrogate";
    EXPECT_FALSE(m.allows("\xE2\x98\x84")) << "U+2604 is not the snowman";
    EXPECT_FALSE(m.allows("\xF0")) << "no set takes a 4-byte code point here";
    EXPECT_FALSE(m.allows("\xFF")) << "not UTF-8";
    EXPECT_TRUE(m.accept(snowman.substr(0, 2)));
    EXPECT_TRUE(m.accept(snowman.substr(2)));
    EXPECT_TRUE(m.complete());
}

// A negated set takes almost any code point, but a sequence's first bytes may already rule out
// every code point (a surrogate's ED A0, F4 90 past U+10FFFF): such a prefix must be refused,
// or generation takes it and then no byte can follow (seen with a JSON string's [^"\\]).
TEST(Matcher, PrefixesOfNoCodePointAreRefusedByNegatedSets) {
    const Grammar g = parse_gbnf(R"(root ::= "\"" [^"\\\x00-\x1F]* "\"")");
    Matcher m(g);
    ASSERT_TRUE(m.accept("\""));
    EXPECT_FALSE(m.allows("\xED\xA0")) << "only surrogates start so";
    EXPECT_FALSE(m.allows("\xF4\x90")) << "past U+10FFFF";
    EXPECT_FALSE(m.allows("\xF4\x90\x80"));
    EXPECT_TRUE(m.allows("\xED\x9F")) << "U+D7C0..U+D7FF";
    EXPECT_TRUE(m.allows("\xF4\x8F"));
    EXPECT_TRUE(m.allows("\xE6\x97"));
    const Grammar ascii = parse_gbnf(R"(root ::= [^\x80-\U0010FFFF]+)");
    Matcher n(ascii);
    EXPECT_FALSE(n.allows("\xC3")) << "a set that excludes every non-ASCII code point";
    EXPECT_TRUE(n.allows("a"));
}

// A repetition copies its item (a literal's every character), so a request's few kilobytes
// could ask for billions of elements: the copies are bounded in all.
TEST(Gbnf, RepetitionsAreBoundedInAll) {
    const std::string literal = "\"" + std::string(200, 'a') + "\"";
    EXPECT_NE(refusal("root ::= " + literal + "{10000}").find("more than 1048576 elements"), std::string::npos);
    std::string many = "root ::=";
    for (int i = 0; i < 120; ++i) {
        many += " [a-z]{10000}";
    }
    EXPECT_NE(refusal(many).find("elements in all"), std::string::npos);
    EXPECT_EQ(refusal(R"(root ::= ("a"{10000}){10000})"), "(parsed)") << "a group is one element";
}

// An exponentially ambiguous grammar (2^n parses after n a's) and a deeply nesting one are
// refused with vkf::Error once they pass the matcher's bounds, leaving the state as it was;
// before the bounds, the fuzz target's 4,096-byte inputs of this kind ran for minutes.
TEST(Matcher, BoundedState) {
    const Grammar ambiguous = parse_gbnf(R"(root ::= x
x ::= "a" x "b" | "a" x "c" | "")");
    Matcher m(ambiguous);
    ASSERT_TRUE(m.accept(std::string(6, 'a'))) << "3 x 2^6 parses are within the bound";
    std::string message;
    try {
        m.accept("a");
    } catch (const Error& e) {
        message = e.what();
    }
    EXPECT_NE(message.find("more than 256 ways"), std::string::npos) << message;
    EXPECT_TRUE(m.accept("bbbbbb")) << "the refused text changed nothing";
    EXPECT_TRUE(m.complete());

    const Grammar nesting = parse_gbnf("root ::= \"(\" root \")\" | \"\"");
    Matcher deep(nesting);
    EXPECT_TRUE(deep.accept(std::string(1000, '(')));
    message.clear();
    try {
        deep.accept(std::string(Matcher::kMaxStackElements, '('));
    } catch (const Error& e) {
        message = e.what();
    }
    EXPECT_NE(message.find("nests deeper"), std::string::npos) << message;
    EXPECT_TRUE(deep.accept(std::string(1000, ')')));
    EXPECT_TRUE(deep.complete());
}

TEST(Matcher, TokenMasks) {
    const Grammar g = parse_gbnf("root ::= (\"yes\" | \"no\") \".\"");
    const std::vector<std::string> vocab{"y", "ye", "yes", "yes.", "n", "no.", "maybe", "", ".", "es"};
    Matcher m(g);
    EXPECT_EQ(m.allowed_tokens(vocab), (std::vector<std::uint8_t>{1, 1, 1, 1, 1, 1, 0, 0, 0, 0}));
    ASSERT_TRUE(m.accept("y"));
    EXPECT_EQ(m.allowed_tokens(vocab), (std::vector<std::uint8_t>{0, 0, 0, 0, 0, 0, 0, 0, 0, 1}));
    ASSERT_TRUE(m.accept("es."));
    EXPECT_TRUE(m.complete());
    EXPECT_EQ(m.allowed_tokens(vocab), std::vector<std::uint8_t>(vocab.size(), 0)) << "only the end may follow";
}

// The oracle: which input positions the elements from `e` on can end at when started at
// `pos`, by plain recursive descent over the same rules (memoized per rule and position), with
// kPrefix standing for "the input ran out inside": the input is a prefix of a longer sentence.
class Oracle {
public:
    static constexpr std::size_t kPrefix = ~std::size_t{0};

    Oracle(const Grammar& g, std::u32string text) : g_(g), text_(std::move(text)) {}

    bool derives() { return rule(g_.root, 0).contains(text_.size()); }
    bool viable() {
        const std::set<std::size_t>& ends = rule(g_.root, 0);
        return ends.contains(kPrefix) || ends.contains(text_.size());
    }

private:
    const std::set<std::size_t>& rule(std::uint32_t id, std::size_t pos) {
        const auto key = std::pair(id, pos);
        if (auto it = memo_.find(key); it != memo_.end()) {
            return it->second;
        }
        std::set<std::size_t> ends;
        const std::vector<Element>& r = g_.rules[id];
        for (std::size_t i = 0; i < r.size(); ++i) {
            const std::set<std::size_t> part = sequence(&r[i], pos);
            ends.insert(part.begin(), part.end());
            while (r[i].op != Op::Alt && r[i].op != Op::End) {
                ++i;
            }
        }
        return memo_[key] = std::move(ends);
    }

    std::set<std::size_t> sequence(const Element* e, std::size_t pos) {
        if (e->op == Op::Alt || e->op == Op::End) {
            return {pos};
        }
        if (e->op == Op::RuleRef) {
            std::set<std::size_t> out;
            const std::set<std::size_t> mids = rule(e->value, pos);
            for (std::size_t mid : mids) {
                if (mid == kPrefix) {
                    out.insert(kPrefix);
                } else {
                    const std::set<std::size_t> rest = sequence(e + 1, mid);
                    out.insert(rest.begin(), rest.end());
                }
            }
            return out;
        }
        // A character set: its elements up to the next that is not part of it.
        const Element* after = e + 1;
        while (after->op == Op::CharAlt || after->op == Op::CharRangeUpper) {
            ++after;
        }
        if (pos == text_.size()) {
            return {kPrefix};
        }
        const char32_t c = text_[pos];
        bool in = e->op == Op::CharAny;
        for (const Element* x = e; x < after && e->op != Op::CharAny; ++x) {
            if (x->op == Op::CharRangeUpper) {
                continue;
            }
            const bool range = x + 1 < after && (x + 1)->op == Op::CharRangeUpper;
            in = in || (range ? x->value <= c && c <= (x + 1)->value : x->value == c);
        }
        if (e->op == Op::CharNot) {
            in = !in;
        }
        return in ? sequence(after, pos + 1) : std::set<std::size_t>{};
    }

    const Grammar& g_;
    std::u32string text_;
    std::map<std::pair<std::uint32_t, std::size_t>, std::set<std::size_t>> memo_;
};

std::string utf8(char32_t c) {
    std::string out;
    if (c < 0x80) {
        out += static_cast<char>(c);
    } else if (c < 0x800) {
        out += static_cast<char>(0xC0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
        out += static_cast<char>(0xE0 | (c >> 12));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    }
    return out;
}

TEST(Matcher, AgreesWithRecursiveDescentOnRandomStrings) {
    struct Case {
        std::string_view grammar;
        std::u32string alphabet;
    };
    const std::vector<Case> cases{
        {"root ::= expr\nexpr ::= term ([-+] term)*\nterm ::= factor ([*/] factor)*\n"
         "factor ::= [0-9]+ | \"(\" expr \")\"",
         U"0123+-*/()"},
        {"root ::= a | b\na ::= \"ab\" a? \"c\"\nb ::= \"a\" [^c]{1,3} \"c\"", U"abcd"},
        {"root ::= (x | x x | \"é\")+ \"!\"\nx ::= [a-cé]", U"abcé!"},
        {kJson, U"{}[]\",:0123456789.-eEtruefalsn \\u"},
    };
    std::mt19937_64 rng(43);
    int derived = 0, viable = 0, dead = 0;
    for (const Case& c : cases) {
        const Grammar g = parse_gbnf(c.grammar);
        for (int trial = 0; trial < 3000; ++trial) {
            std::u32string text;
            const std::size_t length = rng() % 9;
            for (std::size_t i = 0; i < length; ++i) {
                text += c.alphabet[rng() % c.alphabet.size()];
            }
            Oracle oracle(g, text);
            std::string bytes;
            for (char32_t ch : text) {
                bytes += utf8(ch);
            }
            Matcher m(g);
            const bool accepted = m.accept(bytes);
            ASSERT_EQ(accepted, oracle.viable()) << c.grammar << "\non " << bytes;
            if (accepted) {
                ASSERT_EQ(m.complete(), oracle.derives()) << c.grammar << "\non " << bytes;
            }
            derived += oracle.derives() ? 1 : 0;
            viable += accepted ? 1 : 0;
            dead += accepted ? 0 : 1;
        }
    }
    // Random strings over small alphabets: enough of each outcome to mean something.
    EXPECT_GT(derived, 200);
    EXPECT_GT(viable, 1000);
    EXPECT_GT(dead, 1000);
}

}  // namespace
}  // namespace vkf::grammar
