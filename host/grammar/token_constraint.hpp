#pragma once
// A grammar applied to generation (issue 43): which token ids may come next, from the bytes
// each one adds (its piece), and the walk on as tokens are picked. BatchGenerator keeps one
// TokenConstraint per constrained sequence and masks the logits with it before sampling
// (host/model/batch_generation.cpp), so every front end (vkf-server, vkf-run, the C API) gets
// the same behaviour from GenerationOptions::grammar.
//

#include "host/grammar/grammar.hpp"
#include "host/grammar/matcher.hpp"
#include "host/grammar/piece_trie.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace vkf::grammar {

// What GenerationOptions::grammar holds: the grammar and the vocabulary's pieces, shared by the
// sequences that use them.
struct Constraint {
    Grammar grammar;
    std::shared_ptr<const PieceTrie> pieces;
};

class TokenConstraint {
public:
    // Throws vkf::Error when the grammar's start already passes the matcher's bounds.
    explicit TokenConstraint(std::shared_ptr<const Constraint> constraint);

    // One entry per id below `vocab`: 1 where the token's piece may come next; the `end_ids`
    // (end of text) where the text so far is complete. Throws vkf::Error when the matcher's
    // bounds are passed (an ambiguous grammar).
    std::vector<std::uint8_t> mask(std::size_t vocab, std::span<const std::uint32_t> end_ids) const;
    bool complete() const { return matcher_.complete(); }
    // Advances over `id`'s piece; throws vkf::Error when the grammar does not allow it.
    void accept(std::uint32_t id);

private:
    // Masks of the last states seen (key, mask): inside a JSON string every character leads
    // back to the same state, so most steps there cost one lookup instead of a walk.
    static constexpr std::size_t kCachedMasks = 8;

    std::shared_ptr<const Constraint> constraint_;
    Matcher matcher_;
    mutable std::vector<std::pair<std::vector<std::uintptr_t>, std::vector<std::uint8_t>>> cache_;
    mutable std::size_t next_slot_ = 0;
};

}  // namespace vkf::grammar
