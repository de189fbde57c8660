#pragma once
// Added tokens (tokenizer.json's added_tokens): strings such as "<s>" or "<|endoftext|>" that are
// found in the text before anything else and become their id directly. As in Hugging Face:
//   - tokens with normalized=false are searched in the raw text, the others in the normalized
//     text of the stretches between those (their pattern is their content normalized);
//   - the search takes the leftmost match, the longest among those starting there, then goes on
//     after it;
//   - single_word: a match with a word character (Rust's regex \w) right before or after it is
//     not a match;
//   - lstrip / rstrip: the White_Space before / after a match becomes part of it;
//   - decoding gives a normalized token's normalized content (what the decoder can undo: a
//     ByteLevel normalizer's characters), the others' content.

#include "host/text/normalizers.hpp"
#include "host/text/regex.hpp"
#include "host/text/tokenizer.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::text {

struct AddedToken {
    std::string content;
    TokenId id = 0;
    bool single_word = false;
    bool lstrip = false;
    bool rstrip = false;
    bool normalized = true;
    bool special = false;
};

class AddedVocabulary {
public:
    AddedVocabulary();
    // `tokens` in the file's order; `normalizer` (may be null) gives the normalized tokens'
    // patterns.
    AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer);

    // A stretch of the text: an added token's match (id set) or the text between matches.
    struct Stretch {
        std::size_t begin;
        std::size_t end;
        std::optional<TokenId> id;
    };
    // `text` cut at the matches of the tokens with normalized == `normalized`. The stretches
    // cover the text in order, as Hugging Face's find_matches gives them.
    std::vector<Stretch> split(std::string_view text, bool normalized) const;

    const std::vector<AddedToken>& tokens() const { return tokens_; }
    // The string tokens()[i] decodes as.
    const std::string& decoded(std::size_t i) const { return decoded_[i]; }

private:
    // A byte trie of the patterns of one kind, searched leftmost-longest.
    struct Trie {
        struct Node {
            std::vector<std::pair<unsigned char, std::uint32_t>> children;
            int token = -1;  // index into tokens_ of the pattern ending here
        };
        std::vector<Node> nodes{1};
        bool first_byte[256] = {};

        std::optional<std::uint32_t> child(std::uint32_t node, char c) const;
        void insert(std::string_view pattern, int token);
        // The longest pattern starting at text[pos]: (end, token), or token -1.
        std::pair<std::size_t, int> longest_at(std::string_view text, std::size_t pos) const;
    };

    std::vector<AddedToken> tokens_;
    std::vector<std::string> decoded_;  // a normalized token's pattern, or the content
    Trie raw_;
    Trie normalized_;
    Regex word_char_;
};

}  // namespace vkf::text
