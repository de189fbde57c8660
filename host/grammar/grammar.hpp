#pragma once
// Grammars for constrained decoding (issue 43): GBNF, the notation llama.cpp's grammar
// sampler and llama-server's `grammar` field take (llama.cpp's grammars/README.md), parsed into
// flat rules that the matcher (host/grammar/matcher.hpp) walks as a pushdown automaton, one
// Unicode code point at a time.
//
// A rule is its alternatives one after another, each a run of elements ended by Alt (another
// alternative follows) or End (the last). A character set is one Char or CharNot element
// followed by CharAlt elements, any of them followed by CharRangeUpper for a range. Repetitions
// and groups become rules of their own when parsed (x* is R ::= x R | empty), so the matcher
// knows only sequences, alternatives and references.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::grammar {

enum class Op : std::uint8_t {
    End,             // the rule's last alternative ends
    Alt,             // an alternative ends and another follows
    RuleRef,         // value: the rule
    Char,            // value: a code point; starts a character set
    CharNot,         // value: a code point; starts a negated set
    CharRangeUpper,  // value: the upper end of a range whose lower end precedes it
    CharAlt,         // value: another code point of the set
    CharAny,         // any code point (`.`)
};

struct Element {
    Op op = Op::End;
    std::uint32_t value = 0;
    bool operator==(const Element&) const = default;
};

struct Grammar {
    std::vector<std::vector<Element>> rules;  // by rule id
    std::vector<std::string> names;           // by rule id (generated ones: name-N)
    std::uint32_t root = 0;
};

// Parses GBNF text. Throws vkf::Error naming the line and column for a syntax error, and the
// rule for an undefined or left-recursive rule (which a pushdown walk could never leave) or a
// missing `root_rule`.
Grammar parse_gbnf(std::string_view text, std::string_view root_rule = "root");

// Whether the element starts or continues a character set.
inline bool is_char_element(Op op) {
    return op == Op::Char || op == Op::CharNot || op == Op::CharAny;
}

}  // namespace vkf::grammar
