#include "host/grammar/matcher.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vkf::grammar {

namespace {

bool ends_alternative(const Element* e) {
    return e->op == Op::Alt || e->op == Op::End;
}

// Whether the character set at `set` takes code point `cp`, and the element after the set.
std::pair<bool, const Element*> match_char(const Element* set, std::uint32_t cp) {
    if (set->op == Op::CharAny) {
        return {true, set + 1};
    }
    const bool negated = set->op == Op::CharNot;
    bool found = false;
    const Element* e = set;
    do {
        if ((e + 1)->op == Op::CharRangeUpper) {
            found = found || (e->value <= cp && cp <= (e + 1)->value);
            e += 2;
        } else {
            found = found || e->value == cp;
            e += 1;
        }
    } while (e->op == Op::CharAlt);
    return {found != negated, e};
}

// Whether the set could take some code point in [low, high].
bool set_meets(const Element* set, std::uint32_t low, std::uint32_t high) {
    if (set->op == Op::CharAny) {
        return true;
    }
    const auto for_each_range = [set](auto&& f) {
        const Element* e = set;
        do {
            const bool range = (e + 1)->op == Op::CharRangeUpper;
            f(e->value, range ? (e + 1)->value : e->value);
            e += range ? 2 : 1;
        } while (e->op == Op::CharAlt);
    };
    if (set->op == Op::CharNot) {
        // Some code point of [low, high] outside every excluded range: push `next` past the
        // ranges that cover it until none does (sets are a few ranges; no sort, no allocation).
        std::uint32_t next = low;
        for (bool moved = true; moved && next <= high;) {
            moved = false;
            for_each_range([&](std::uint32_t a, std::uint32_t b) {
                if (a <= next && next <= b) {
                    next = b + 1;
                    moved = true;
                }
            });
        }
        return next <= high;
    }
    bool meets = false;
    for_each_range([&](std::uint32_t a, std::uint32_t b) { meets = meets || (a <= high && b >= low); });
    return meets;
}

// The smallest code point a UTF-8 sequence of `length` bytes may encode (shorter is overlong).
std::uint32_t smallest_of_length(int length) {
    return length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000;
}

void dedupe(std::vector<std::vector<const Element*>>& stacks) {
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
}

}  // namespace

Matcher::Matcher(const Grammar& grammar) : grammar_(grammar) {
    expand_rule(Stack{}, grammar.root, state_.stacks);
    dedupe(state_.stacks);
    check_bounds(state_.stacks, true);
}

void Matcher::check_bounds(const std::vector<Stack>& stacks, bool deduplicated) {
    // Before deduplication, nullable alternatives may repeat a stack a few times over.
    const std::size_t most = deduplicated ? kMaxStacks : 4 * kMaxStacks;
    if (stacks.size() > most) {
        throw Error(
            fmt::format("grammar: the text so far parses in more than {} ways (an ambiguous grammar, "
                        "such as x ::= \"a\" x \"b\" | \"a\" x \"c\" | \"\"); make its "
                        "alternatives start differently",
                        kMaxStacks));
    }
    std::size_t elements = 0;
    for (const Stack& stack : stacks) {
        elements += stack.size();
    }
    if (elements > (deduplicated ? kMaxStackElements : 4 * kMaxStackElements)) {
        throw Error(
            fmt::format("grammar: the text so far nests deeper than the matcher tracks ({} pending "
                        "elements over {} parses)",
                        elements, stacks.size()));
    }
}

void Matcher::expand(Stack&& stack, std::vector<Stack>& out) const {
    if (stack.empty() || stack.back()->op != Op::RuleRef) {
        out.push_back(std::move(stack));
        if (out.size() > 4 * kMaxStacks) {
            check_bounds(out, false);
        }
        return;
    }
    const Element* ref = stack.back();
    Stack rest(stack.begin(), stack.end() - 1);
    if (!ends_alternative(ref + 1)) {
        rest.push_back(ref + 1);
    }
    expand_rule(rest, ref->value, out);
}

void Matcher::expand_rule(const Stack& rest, std::uint32_t id, std::vector<Stack>& out) const {
    const std::vector<Element>& rule = grammar_.rules[id];
    for (std::size_t i = 0; i < rule.size(); ++i) {
        Stack next = rest;
        if (!ends_alternative(&rule[i])) {
            next.push_back(&rule[i]);
        }
        expand(std::move(next), out);
        while (!ends_alternative(&rule[i])) {
            ++i;
        }
        if (rule[i].op == Op::End) {
            break;
        }
    }
}

std::vector<Matcher::Stack> Matcher::step(const std::vector<Stack>& stacks, std::uint32_t cp) const {
    std::vector<Stack> out;
    for (const Stack& stack : stacks) {
        if (stack.empty()) {
            continue;
        }
        const auto [taken, after] = match_char(stack.back(), cp);
        if (!taken) {
            continue;
        }
        Stack next(stack.begin(), stack.end() - 1);
        if (!ends_alternative(after)) {
            next.push_back(after);
        }
        expand(std::move(next), out);
    }
    dedupe(out);
    check_bounds(out, true);
    return out;
}

bool Matcher::could_continue(const State& state) const {
    const int bits = 6 * state.missing;
    const std::uint32_t low = std::max(state.partial << bits, smallest_of_length(state.length));
    const std::uint32_t high = std::min<std::uint32_t>((state.partial << bits) | ((1u << bits) - 1), 0x10FFFF);
    // Bytes that start only code points past U+10FFFF or only UTF-16 surrogates start none.
    if (low > high || (low >= 0xD800 && high <= 0xDFFF)) {
        return false;
    }
    return std::any_of(state.stacks.begin(), state.stacks.end(),
                       [&](const Stack& s) { return !s.empty() && set_meets(s.back(), low, high); });
}

bool Matcher::advance(State& state, std::string_view bytes) const {
    for (const char c : bytes) {
        const auto b = static_cast<unsigned char>(c);
        if (state.missing > 0) {
            if ((b & 0xC0) != 0x80) {
                return false;
            }
            state.partial = (state.partial << 6) | (b & 0x3F);
            if (--state.missing > 0) {
                continue;
            }
            // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
            if (state.partial < smallest_of_length(state.length) || state.partial > 0x10FFFF ||
                (state.partial >= 0xD800 && state.partial <= 0xDFFF)) {
                return false;
            }
        } else if (b < 0x80) {
            state.partial = b;
        } else {
            // Lead bytes of 2, 3 and 4 byte sequences (C0, C1 and F5.. never start one).
            const int length = b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
            if (length == 0) {
                return false;
            }
            state.partial = b & (0x7F >> length);
            state.missing = length - 1;
            state.length = length;
            continue;
        }
        state.stacks = step(state.stacks, state.partial);
        if (state.stacks.empty()) {
            return false;
        }
    }
    return state.missing == 0 || could_continue(state);
}

bool Matcher::accept(std::string_view bytes) {
    State next = state_;
    if (!advance(next, bytes)) {
        return false;
    }
    state_ = std::move(next);
    return true;
}

bool Matcher::allows(std::string_view bytes) const {
    State next = state_;
    return advance(next, bytes);
}

bool Matcher::complete() const {
    return state_.missing == 0 &&
           std::any_of(state_.stacks.begin(), state_.stacks.end(), [](const Stack& s) { return s.empty(); });
}

std::vector<std::uint8_t> Matcher::allowed_tokens(std::span<const std::string> pieces) const {
    std::vector<std::uint8_t> allowed(pieces.size(), 0);
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        allowed[i] = !pieces[i].empty() && allows(pieces[i]) ? 1 : 0;
    }
    return allowed;
}

std::vector<std::uintptr_t> Matcher::state_key() const {
    std::vector<std::uintptr_t> key{state_.partial, static_cast<std::uintptr_t>(state_.missing),
                                    static_cast<std::uintptr_t>(state_.length)};
    for (const Stack& stack : state_.stacks) {  // sorted and deduplicated: one order per set
        key.push_back(stack.size());
        for (const Element* e : stack) {
            key.push_back(reinterpret_cast<std::uintptr_t>(e));
        }
    }
    return key;
}

std::vector<std::uint8_t> Matcher::allowed_tokens(const PieceTrie& trie) const {
    std::vector<std::uint8_t> allowed(trie.size(), 0);
    const std::vector<PieceTrie::Node>& nodes = trie.nodes();
    // Depth first: each node's state is its parent's advanced over the node's byte.
    std::vector<std::pair<std::uint32_t, State>> pending;
    const auto push_children = [&](const PieceTrie::Node& node, const State& state) {
        for (std::uint32_t c = node.first_child; c < node.first_child + node.children; ++c) {
            const char byte = static_cast<char>(nodes[c].byte);
            if (state.missing == 0 && nodes[c].byte < 0x80) {
                // An ASCII byte is a whole code point: step the stacks without copying the state.
                State next{.stacks = step(state.stacks, nodes[c].byte)};
                if (!next.stacks.empty()) {
                    pending.emplace_back(c, std::move(next));
                }
                continue;
            }
            State next = state;
            if (advance(next, std::string_view(&byte, 1))) {
                pending.emplace_back(c, std::move(next));
            }
        }
    };
    push_children(nodes[0], state_);
    while (!pending.empty()) {
        auto [n, state] = std::move(pending.back());
        pending.pop_back();
        for (const std::uint32_t id : trie.tokens_at(nodes[n])) {
            allowed[id] = 1;
        }
        push_children(nodes[n], state);
    }
    return allowed;
}

}  // namespace vkf::grammar
