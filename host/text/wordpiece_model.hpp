#pragma once
// The WordPiece model (Hugging Face's models::wordpiece, as BERT's tokenizers use it): each piece
// is cut greedily from the left into the longest tokens of the vocabulary, every token after the
// first of a piece looked up with the continuing-subword prefix ("##"). A piece that cannot be cut
// all the way, or that is longer than max_input_chars_per_word characters, is one unk token.

#include "host/text/model.hpp"
#include "host/text/vocab_index.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::text {

struct WordPieceOptions {
    TokenId unk = 0;
    std::string continuing_subword_prefix = "##";
    std::size_t max_input_chars_per_word = 100;
};

class WordPieceModel final : public Model {
public:
    // `tokens[i]` is the string of id i; every string is distinct; options.unk < tokens.size().
    WordPieceModel(std::vector<std::string> tokens, WordPieceOptions options);

    std::size_t size() const override { return tokens_.size(); }
    std::size_t entries() const override { return entries_; }
    std::optional<TokenId> find(std::string_view token) const override;
    std::string_view token(TokenId id) const override { return tokens_[id]; }
    void tokenize(std::string_view piece, std::vector<TokenId>& out) const override;

private:
    std::vector<std::string> tokens_;  // by id; empty where an id is unused
    std::size_t entries_ = 0;
    VocabIndex index_;
    WordPieceOptions options_;
    // No token is longer (in bytes), so no match needs to be tried past it: this keeps a piece
    // linear in its length when max_input_chars_per_word is large.
    std::size_t longest_token_ = 0;
};

}  // namespace vkf::text
