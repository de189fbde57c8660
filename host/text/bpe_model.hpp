#pragma once
// The BPE model (Hugging Face's models::bpe): a vocabulary of token strings and ranked merges.
// A piece of text starts as one symbol per character; the adjacent pair with the lowest-ranked
// merge (the leftmost among equals) is merged, again and again, until no pair has a merge.
// Results are cached per piece, so repeated words cost one lookup.

#include "host/text/model.hpp"
#include "host/text/vocab_index.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vkf::text {

struct BpeOptions {
    std::optional<TokenId> unk;             // unk_token's id: unknown characters become it
    std::string continuing_subword_prefix;  // put before every character but the first
    std::string end_of_word_suffix;         // put after the last character
    bool fuse_unk = false;                  // consecutive unknown characters give one unk
    bool byte_fallback = false;             // unknown characters as their "<0xXX>" byte tokens
    bool ignore_merges = false;             // a piece that is a token is that token
};

class BpeModel final : public Model {
public:
    // `tokens[i]` is the string of id i; every string is distinct.
    explicit BpeModel(std::vector<std::string> tokens);
    BpeModel(BpeModel&&) noexcept;
    ~BpeModel();

    // Merges are added in rank order; a pair given again takes the later rank, as in Hugging Face.
    void reserve_merges(std::size_t count) { merges_.reserve(count); }
    void add_merge(TokenId left, TokenId right, TokenId merged);
    // Before the first tokenize: results are cached.
    void set_options(BpeOptions options) { options_ = std::move(options); }
    const BpeOptions& options() const { return options_; }

    std::size_t size() const override { return tokens_.size(); }
    std::size_t entries() const override { return entries_; }
    std::optional<TokenId> find(std::string_view token) const override;
    std::string_view token(TokenId id) const override { return tokens_[id]; }

    void tokenize(std::string_view piece, std::vector<TokenId>& out) const override;

private:
    struct Merge {
        std::uint32_t rank;
        TokenId merged;
    };
    struct Cache;

    std::vector<TokenId> merge_piece(std::string_view piece) const;
    const Merge* find_merge(TokenId left, TokenId right) const;

    std::vector<std::string> tokens_;  // by id; empty where an id is unused
    std::size_t entries_ = 0;
    VocabIndex index_;
    std::unordered_map<std::uint64_t, Merge> merges_;  // (left << 32 | right)
    std::uint32_t next_rank_ = 0;
    BpeOptions options_;
    std::unique_ptr<Cache> cache_;
};

}  // namespace vkf::text
