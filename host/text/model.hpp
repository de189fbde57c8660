#pragma once
// The model stage of a tokenizer (Hugging Face's models): a vocabulary of token strings and the
// algorithm that cuts one pre-tokenized piece into tokens of it. Implemented: BPE
// (bpe_model.hpp) and WordPiece (wordpiece_model.hpp).

#include "host/text/tokenizer.hpp"

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace vkf::text {

class Model {
public:
    virtual ~Model() = default;

    // The vocabulary holds the ids 0..size()-1.
    virtual std::size_t size() const = 0;
    virtual std::optional<TokenId> find(std::string_view token) const = 0;
    // `id` < size().
    virtual std::string_view token(TokenId id) const = 0;

    // Appends the ids of `piece` (valid UTF-8, not empty).
    virtual void tokenize(std::string_view piece, std::vector<TokenId>& out) const = 0;
};

}  // namespace vkf::text
