#include "host/grammar/token_constraint.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vkf::grammar {

TokenConstraint::TokenConstraint(std::shared_ptr<const Constraint> constraint)
    : constraint_(std::move(constraint)), matcher_(constraint_->grammar) {}

std::vector<std::uint8_t> TokenConstraint::mask(std::size_t vocab, std::span<const std::uint32_t> end_ids) const {
    std::vector<std::uint8_t> allowed = matcher_.allowed_tokens(*constraint_->pieces);
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
