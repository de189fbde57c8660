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

    // The vocabulary's ids are below size(); some may be unused (gaps: a vocabulary converted
    // from another format), their token() empty.
    virtual std::size_t size() const = 0;
    // How many tokens the vocabulary holds: Hugging Face's Model::get_vocab_size(), after
    // which it numbers added tokens that are not in the vocabulary.
    virtual std::size_t entries() const = 0;
    virtual std::optional<TokenId> find(std::string_view token) const = 0;
    // `id` < size().
    virtual std::string_view token(TokenId id) const = 0;

    // Appends the ids of `piece` (valid UTF-8, not empty).
    virtual void tokenize(std::string_view piece, std::vector<TokenId>& out) const = 0;
};

}  // namespace vkf::text
