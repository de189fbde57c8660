// GBNF text to flat rules (grammar.hpp). The notation follows llama.cpp's grammars/README.md:
// `name ::= alternatives`, one rule per line (alternatives and groups may go on over lines
// inside parentheses, a `|` continues a rule on the next line only after it), "literals" and
// [character classes] with \x \u \U and the usual escapes, `.`, (groups), rule names, and the
// repetitions * + ? {m} {m,} {m,n}; `#` starts a comment.

#include "host/grammar/grammar.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <functional>
#include <limits>
#include <map>
#include <optional>

namespace vkf::grammar {

namespace {

constexpr std::uint32_t kUnbounded = std::numeric_limits<std::uint32_t>::max();
// More copies than any grammar needs; a bound keeps `x{1000000000}` from exhausting memory.
constexpr std::uint32_t kMaxRepetition = 10'000;
// Repetitions copy their item, and nested ones multiply (("a"{10000}){10000} is 10^8
// elements from 25 bytes of a request): the copies of a whole grammar are bounded too.
constexpr std::size_t kMaxRepeatedElements = std::size_t{1} << 20;

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class Parser {
public:
    explicit Parser(std::string_view text) : text_(text) {}

    Grammar run(std::string_view root_rule) {
        skip_space(true);
        while (!at_end()) {
            const std::string_view name = parse_name();
            skip_space(false);
            if (text_.substr(pos_, 3) != "::=") {
                fail(fmt::format("expected '::=' after the rule name '{}'", name));
            }
            pos_ += 3;
            skip_space(true);
            const std::uint32_t id = rule_id(name);
            if (defined_[id]) {
                fail(fmt::format("rule '{}' is defined twice", name));
            }
            defined_[id] = true;
            parse_alternates(name, id, false);
            if (!at_end() && peek() != '\n' && peek() != '\r') {
                fail(fmt::format("unexpected '{}' in rule '{}'", peek(), name));
            }
            skip_space(true);
        }
        for (std::uint32_t id = 0; id < rules_.size(); ++id) {
            if (!defined_[id]) {
                throw Error(fmt::format("grammar: rule '{}' is used but not defined", names_[id]));
            }
        }
        const auto root = ids_.find(root_rule);
        if (root == ids_.end()) {
            throw Error(fmt::format("grammar: no rule '{}' to start from", root_rule));
        }
        Grammar grammar{.rules = std::move(rules_), .names = std::move(names_), .root = root->second};
        refuse_left_recursion(grammar);
        return grammar;
    }

private:
    bool at_end() const { return pos_ >= text_.size(); }
    char peek() const { return at_end() ? '\0' : text_[pos_]; }

    [[noreturn]] void fail(std::string_view what) const {
        std::size_t line = 1, column = 1;
        for (std::size_t i = 0; i < pos_ && i < text_.size(); ++i) {
            if (text_[i] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
        throw Error(fmt::format("grammar: line {}, column {}: {}", line, column, what));
    }

    std::uint32_t rule_id(std::string_view name) {
        const auto it = ids_.find(name);
        if (it != ids_.end()) {
            return it->second;
        }
        const auto id = static_cast<std::uint32_t>(rules_.size());
        ids_.emplace(std::string(name), id);
        names_.emplace_back(name);
        rules_.emplace_back();
        defined_.push_back(false);
        return id;
    }

    // A rule of the parser's own (a group or a repetition), defined by its maker.
    std::uint32_t generated(std::string_view base) {
        const std::uint32_t id = rule_id(fmt::format("{}-{}", base, rules_.size()));
        defined_[id] = true;
        return id;
    }

    void skip_space(bool newline_ok) {
        while (!at_end()) {
            const char c = peek();
            if (c == ' ' || c == '\t') {
                ++pos_;
            } else if (c == '#') {
                while (!at_end() && peek() != '\n') {
                    ++pos_;
                }
            } else if ((c == '\n' || c == '\r') && newline_ok) {
                ++pos_;
            } else {
                return;
            }
        }
    }

    std::string_view parse_name() {
        const std::size_t start = pos_;
        while (!at_end() && is_name_char(peek())) {
            ++pos_;
        }
        if (pos_ == start) {
            fail(at_end() ? std::string("expected a rule name")
                          : fmt::format("expected a rule name, not '{}'", peek()));
        }
        return text_.substr(start, pos_ - start);
    }

    std::uint32_t parse_hex(std::size_t digits) {
        std::uint32_t value = 0;
        for (std::size_t i = 0; i < digits; ++i, ++pos_) {
            const char c = peek();
            const int digit = c >= '0' && c <= '9'   ? c - '0'
                              : c >= 'a' && c <= 'f' ? c - 'a' + 10
                              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                     : -1;
            if (digit < 0) {
                fail(fmt::format("expected {} hexadecimal digits", digits));
            }
            value = value * 16 + static_cast<std::uint32_t>(digit);
        }
        if (value > 0x10FFFF) {
            fail(fmt::format("U+{:X} is not a Unicode code point", value));
        }
        return value;
    }

    // One character of a literal or a class: an escape or one UTF-8 encoded code point.
    std::uint32_t parse_char() {
        if (at_end()) {
            fail("the text ends inside a literal or a character class");
        }
        const auto byte = static_cast<unsigned char>(peek());
        if (byte == '\\') {
            ++pos_;
            const char c = peek();
            ++pos_;
            switch (c) {
                case 'x':
                    return parse_hex(2);
                case 'u':
                    return parse_hex(4);
                case 'U':
                    return parse_hex(8);
                case 't':
                    return '\t';
                case 'n':
                    return '\n';
                case 'r':
                    return '\r';
                case '"':
                case '[':
                case ']':
                case '\\':
                case '-':
                case '^':
                case '/':
                    return static_cast<unsigned char>(c);
                default:
                    --pos_;
                    fail(fmt::format("unknown escape '\\{}'", c));
            }
        }
        const int length = byte < 0x80           ? 1
                           : (byte >> 5) == 0x6  ? 2
                           : (byte >> 4) == 0xE  ? 3
                           : (byte >> 3) == 0x1E ? 4
                                                 : 0;
        if (length == 0 || pos_ + length > text_.size()) {
            fail("invalid UTF-8");
        }
        std::uint32_t cp = length == 1 ? byte : byte & (0x7F >> length);
        for (int i = 1; i < length; ++i) {
            const auto next = static_cast<unsigned char>(text_[pos_ + i]);
            if ((next & 0xC0) != 0x80) {
                fail("invalid UTF-8");
            }
            cp = (cp << 6) | (next & 0x3F);
        }
        pos_ += length;
        return cp;
    }

    void parse_alternates(std::string_view name, std::uint32_t id, bool nested) {
        std::vector<Element> out;
        parse_sequence(name, out, nested);
        while (peek() == '|') {
            out.push_back({Op::Alt, 0});
            ++pos_;
            skip_space(true);
            parse_sequence(name, out, nested);
        }
        out.push_back({Op::End, 0});
        rules_[id] = std::move(out);
    }

    void parse_sequence(std::string_view name, std::vector<Element>& out, bool nested) {
        constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
        std::size_t last = kNone;  // where the last symbol starts in `out`, for a repetition
        while (!at_end()) {
            const char c = peek();
            if (c == '"') {
                ++pos_;
                last = out.size();
                while (peek() != '"') {
                    out.push_back({Op::Char, parse_char()});
                }
                ++pos_;
            } else if (c == '[') {
                ++pos_;
                last = out.size();
                Op first = Op::Char;
                if (peek() == '^') {
                    ++pos_;
                    first = Op::CharNot;
                }
                while (peek() != ']') {
                    const std::uint32_t low = parse_char();
                    out.push_back({out.size() == last ? first : Op::CharAlt, low});
                    if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
                        ++pos_;
                        const std::uint32_t high = parse_char();
                        if (high < low) {
                            fail(fmt::format("the range U+{:X}-U+{:X} is empty", low, high));
                        }
                        out.push_back({Op::CharRangeUpper, high});
                    }
                }
                if (out.size() == last) {
                    fail("an empty character class");
                }
                ++pos_;
            } else if (is_name_char(c)) {
                last = out.size();
                out.push_back({Op::RuleRef, rule_id(parse_name())});
            } else if (c == '(') {
                ++pos_;
                skip_space(true);
                const std::uint32_t group = generated(name);
                parse_alternates(name, group, true);
                if (peek() != ')') {
                    fail("expected ')'");
                }
                ++pos_;
                last = out.size();
                out.push_back({Op::RuleRef, group});
            } else if (c == '.') {
                ++pos_;
                last = out.size();
                out.push_back({Op::CharAny, 0});
            } else if (c == '*' || c == '+' || c == '?' || c == '{') {
                if (last == kNone) {
                    fail(fmt::format("'{}' repeats nothing", c));
                }
                ++pos_;
                const auto [low, high] = c == '*'   ? std::pair{0u, kUnbounded}
                                         : c == '+' ? std::pair{1u, kUnbounded}
                                         : c == '?' ? std::pair{0u, 1u}
                                                    : parse_counts();
                repeat(name, out, last, low, high);
                last = kNone;
            } else {
                return;
            }
            skip_space(nested);
        }
    }

    std::uint32_t parse_count() {
        const std::size_t start = pos_;
        std::uint64_t n = 0;
        while (peek() >= '0' && peek() <= '9') {
            n = n * 10 + static_cast<std::uint64_t>(peek() - '0');
            if (n > kMaxRepetition) {
                fail(fmt::format("a repetition count over {}", kMaxRepetition));
            }
            ++pos_;
        }
        if (pos_ == start) {
            fail("expected a repetition count");
        }
        return static_cast<std::uint32_t>(n);
    }

    // {m}, {m,} or {m,n}, after the '{'.
    std::pair<std::uint32_t, std::uint32_t> parse_counts() {
        skip_space(true);
        const std::uint32_t low = parse_count();
        skip_space(true);
        std::uint32_t high = low;
        if (peek() == ',') {
            ++pos_;
            skip_space(true);
            high = peek() == '}' ? kUnbounded : parse_count();
            skip_space(true);
        }
        if (peek() != '}') {
            fail("expected '}'");
        }
        ++pos_;
        if (high < low) {
            fail(fmt::format("the repetition {{{},{}}} allows nothing", low, high));
        }
        return {low, high};
    }

    // out[start..] repeated low..high times: low copies, then either R ::= item R | empty, or
    // high - low nested optionals R_k ::= item R_(k-1) | empty.
    void repeat(std::string_view name, std::vector<Element>& out, std::size_t start, std::uint32_t low,
                std::uint32_t high) {
        const std::vector<Element> item(out.begin() + static_cast<std::ptrdiff_t>(start), out.end());
        repeated_ += item.size() * (high == kUnbounded ? std::size_t{low} + 1 : std::size_t{high});
        if (repeated_ > kMaxRepeatedElements) {
            fail(fmt::format("the repetitions copy more than {} elements in all; nest fewer or smaller ones",
                             kMaxRepeatedElements));
        }
        out.resize(start);
        for (std::uint32_t i = 0; i < low; ++i) {
            out.insert(out.end(), item.begin(), item.end());
        }
        if (high == kUnbounded) {
            const std::uint32_t rest = generated(name);
            std::vector<Element> body = item;
            body.insert(body.end(), {{Op::RuleRef, rest}, {Op::Alt, 0}, {Op::End, 0}});
            rules_[rest] = std::move(body);
            out.push_back({Op::RuleRef, rest});
            return;
        }
        std::optional<std::uint32_t> inner;
        for (std::uint32_t i = low; i < high; ++i) {
            const std::uint32_t optional = generated(name);
            std::vector<Element> body = item;
            if (inner) {
                body.push_back({Op::RuleRef, *inner});
            }
            body.insert(body.end(), {{Op::Alt, 0}, {Op::End, 0}});
            rules_[optional] = std::move(body);
            inner = optional;
        }
        if (inner) {
            out.push_back({Op::RuleRef, *inner});
        }
    }

    // A rule that reaches itself before any character (through rules that may match nothing)
    // would have the matcher expand it forever.
    static void refuse_left_recursion(const Grammar& g) {
        const std::size_t n = g.rules.size();
        std::vector<bool> nullable(n, false);
        for (bool changed = true; changed;) {
            changed = false;
            for (std::size_t r = 0; r < n; ++r) {
                if (nullable[r]) {
                    continue;
                }
                bool all = true;
                for (const Element& e : g.rules[r]) {
                    if (e.op == Op::Alt || e.op == Op::End) {
                        if (all) {
                            nullable[r] = changed = true;
                            break;
                        }
                        all = true;
                    } else if (e.op != Op::RuleRef || !nullable[e.value]) {
                        all = false;
                    }
                }
            }
        }
        // left[r]: the rules r may start with.
        std::vector<std::vector<std::uint32_t>> left(n);
        for (std::size_t r = 0; r < n; ++r) {
            bool leading = true;
            for (const Element& e : g.rules[r]) {
                if (e.op == Op::Alt || e.op == Op::End) {
                    leading = true;
                } else if (leading && e.op == Op::RuleRef) {
                    left[r].push_back(e.value);
                    leading = nullable[e.value];
                } else if (e.op != Op::CharRangeUpper && e.op != Op::CharAlt) {
                    leading = false;
                }
            }
        }
        std::vector<std::uint8_t> state(n, 0);  // 0 unseen, 1 on the path, 2 done
        const std::function<void(std::uint32_t)> visit = [&](std::uint32_t r) {
            state[r] = 1;
            for (std::uint32_t next : left[r]) {
                if (state[next] == 1) {
                    throw Error(
                        fmt::format("grammar: rule '{}' is left-recursive (it can reach itself before any "
                                    "character; a repetition of something that may be empty does too)",
                                    g.names[next]));
                }
                if (state[next] == 0) {
                    visit(next);
                }
            }
            state[r] = 2;
        };
        for (std::uint32_t r = 0; r < n; ++r) {
            if (state[r] == 0) {
                visit(r);
            }
        }
    }

    std::string_view text_;
    std::size_t pos_ = 0;
    std::map<std::string, std::uint32_t, std::less<>> ids_;
    std::vector<std::vector<Element>> rules_;
    std::size_t repeated_ = 0;  // elements the repetitions copied so far
    std::vector<std::string> names_;
    std::vector<bool> defined_;
};

}  // namespace

Grammar parse_gbnf(std::string_view text, std::string_view root_rule) {
    return Parser(text).run(root_rule);
}

}  // namespace vkf::grammar
