#pragma once
// Where generated text stands in a grammar, and which tokens may come next (issue 43's
// constrained decoding). The state is a set of stacks, each the elements still to match along
// one way of parsing the text so far, its top always a character set (an empty stack: the text
// is a whole sentence of the grammar); a code point advances every stack whose top accepts it
// and drops the others. Text arrives as bytes (a token's piece), so a code point split over
// tokens waits in the state until its last byte. llama.cpp's grammar sampler walks GBNF the
// same way.
//
// An ambiguous grammar can keep exponentially many stacks alive (x ::= "a" x "b" | "a" x "c" |
// "" has 2^n after n a's), and nesting makes stacks deep, so the state is bounded: more than
// kMaxStacks stacks or kMaxStackElements elements in all throws vkf::Error naming the bound,
// where an unbounded walk would stall the server for minutes on one request.

#include "host/grammar/grammar.hpp"
#include "host/grammar/piece_trie.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::grammar {

class Matcher {
public:
    static constexpr std::size_t kMaxStacks = 256;
    static constexpr std::size_t kMaxStackElements = 16384;

    // The grammar must outlive the matcher.
    explicit Matcher(const Grammar& grammar);

    // Advances over `bytes` (UTF-8; a last code point may be incomplete). Returns false, and
    // changes nothing, when the grammar does not allow them here or they are not UTF-8. Throws
    // vkf::Error, changing nothing, when the state would pass its bounds (see above).
    bool accept(std::string_view bytes);
    // Whether accept(bytes) would succeed.
    bool allows(std::string_view bytes) const;
    // The text so far is a whole sentence (end of generation allowed), with no code point open.
    bool complete() const;

    // For each token's bytes: whether it may come next. Empty pieces are not allowed (they
    // would let generation run on without progress); the end-of-text token is the caller's,
    // allowed when complete(). One pass over every piece: O(vocabulary x piece length x stacks).
    std::vector<std::uint8_t> allowed_tokens(std::span<const std::string> pieces) const;
    // The same over a trie of the pieces (one entry per piece), each shared prefix walked once.
    std::vector<std::uint8_t> allowed_tokens(const PieceTrie& trie) const;
    // The state as values: two matchers of one grammar with equal keys allow the same tokens
    // (a JSON string's characters lead back to one state, so a caller may keep its mask).
    std::vector<std::uintptr_t> state_key() const;

private:
    using Stack = std::vector<const Element*>;
    struct State {
        std::vector<Stack> stacks;
        std::uint32_t partial = 0;  // a code point's bits so far
        int missing = 0;            // its continuation bytes still to come
        int length = 0;             // its bytes in all
    };

    // Stacks with a character set on top (or empty) from `stack`, rule references expanded.
    void expand(Stack&& stack, std::vector<Stack>& out) const;
    // Throws when `stacks` (expanded, not yet deduplicated: at most 4x the bound) pass the bounds.
    static void check_bounds(const std::vector<Stack>& stacks, bool deduplicated);
    // expand() of `rest` with each alternative of rule `id` on top.
    void expand_rule(const Stack& rest, std::uint32_t id, std::vector<Stack>& out) const;
    // The stacks after code point `cp`.
    std::vector<Stack> step(const std::vector<Stack>& stacks, std::uint32_t cp) const;
    // Whether some stack's top could take a code point starting with `partial` (high bits
    // known, `missing` continuation bytes to come).
    bool could_continue(const State& state) const;
    bool advance(State& state, std::string_view bytes) const;

    const Grammar& grammar_;
    State state_;
};

}  // namespace vkf::grammar
