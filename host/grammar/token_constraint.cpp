#include "host/grammar/token_constraint.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vkf::grammar {

TokenConstraint::TokenConstraint(std::shared_ptr<const Constraint> constraint)
    : constraint_(std::move(constraint)), matcher_(constraint_->grammar) {}

std::vector<std::uint8_t> TokenConstraint::mask(std::size_t vocab, std::span<const std::uint32_t> end_ids) const {
    std::vector<std::uintptr_t> key = matcher_.state_key();
    std::vector<std::uint8_t> allowed;
    const auto hit = std::find_if(cache_.begin(), cache_.end(), [&](const auto& entry) { return entry.first == key; });
    if (hit != cache_.end()) {
        allowed = hit->second;
    } else {
        allowed = matcher_.allowed_tokens(*constraint_->pieces);
        if (cache_.size() < kCachedMasks) {
            cache_.emplace_back(std::move(key), allowed);
        } else {
            cache_[next_slot_] = {std::move(key), allowed};
            next_slot_ = (next_slot_ + 1) % kCachedMasks;
        }
    }
    // The model's rows may be longer than the tokenizer's ids (padding), or shorter.
    allowed.resize(vocab, 0);
    const bool complete = matcher_.complete();
    for (const std::uint32_t id : end_ids) {
        if (id < vocab) {
            allowed[id] = complete ? 1 : 0;
        }
    }
    return allowed;
}

void TokenConstraint::accept(std::uint32_t id) {
    const PieceTrie& pieces = *constraint_->pieces;
    if (id >= pieces.size() || pieces.piece(id).empty() || !matcher_.accept(pieces.piece(id))) {
        throw Error(fmt::format("grammar: token {} does not continue the text in the grammar", id));
    }
}

}  // namespace vkf::grammar
