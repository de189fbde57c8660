#include "host/text/added_tokens.hpp"

#include "host/text/unicode.hpp"
#include "host/text/utf8.hpp"

#include <algorithm>

namespace vkf::text {
namespace {

// Rust's regex \w, which Hugging Face's single_word test uses.
Regex word_char_regex() {
    return Regex::from_pcre2(R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}])", "the single_word test");
}

}  // namespace

std::optional<std::uint32_t> AddedVocabulary::Trie::child(std::uint32_t node, char c) const {
    const auto b = static_cast<unsigned char>(c);
    for (const auto& [byte, next] : nodes[node].children) {
        if (byte == b) {
            return next;
        }
    }
    return std::nullopt;
}

void AddedVocabulary::Trie::insert(std::string_view pattern, int token) {
    if (pattern.empty()) {
        return;
    }
    first_byte[static_cast<unsigned char>(pattern[0])] = true;
    std::uint32_t node = 0;
    for (const char c : pattern) {
        if (const std::optional<std::uint32_t> next = child(node, c)) {
            node = *next;
        } else {
            nodes[node].children.emplace_back(static_cast<unsigned char>(c), static_cast<std::uint32_t>(nodes.size()));
            node = static_cast<std::uint32_t>(nodes.size());
            nodes.emplace_back();
        }
    }
    if (nodes[node].token < 0) {  // of two equal patterns, the first given wins
        nodes[node].token = token;
    }
}

std::pair<std::size_t, int> AddedVocabulary::Trie::longest_at(std::string_view text, std::size_t pos) const {
    std::pair<std::size_t, int> best{pos, -1};
    std::uint32_t node = 0;
    for (std::size_t i = pos; i < text.size(); ++i) {
        const std::optional<std::uint32_t> next = child(node, text[i]);
        if (!next) {
            break;
        }
        node = *next;
        if (nodes[node].token >= 0) {
            best = {i + 1, nodes[node].token};
        }
    }
    return best;
}

AddedVocabulary::AddedVocabulary() : word_char_(word_char_regex()) {}

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer)
    : tokens_(std::move(tokens)), word_char_(word_char_regex()) {
    for (const AddedToken& token : tokens_) {
        decoded_.push_back(token.normalized && normalizer ? normalizer->normalize(token.content) : token.content);
    }
    // Special tokens first, then the others, each in the file's order (Hugging Face's order).
    for (const bool special : {true, false}) {
        for (std::size_t i = 0; i < tokens_.size(); ++i) {
            if (tokens_[i].special == special) {
                (tokens_[i].normalized ? normalized_ : raw_).insert(decoded_[i], static_cast<int>(i));
            }
        }
    }
}

std::vector<AddedVocabulary::Stretch> AddedVocabulary::split(std::string_view text, bool normalized) const {
    const Trie& trie = normalized ? normalized_ : raw_;
    std::vector<Stretch> stretches;
    std::size_t covered = 0;  // the end of the last match (Hugging Face's start_offset)
    for (std::size_t pos = 0; pos < text.size();) {
        if (!trie.first_byte[static_cast<unsigned char>(text[pos])]) {
            ++pos;
            continue;
        }
        const auto [match_end, index] = trie.longest_at(text, pos);
        if (index < 0) {
            ++pos;
            continue;
        }
        std::size_t start = pos;
        std::size_t stop = match_end;
        pos = match_end;  // the search goes on after the match as found, whatever is stripped
        const AddedToken& token = tokens_[static_cast<std::size_t>(index)];
        if (token.single_word) {
            const bool word_before = start > 0 && word_char_.matches_at(text, utf8_previous(text, start));
            const bool word_after = stop < text.size() && word_char_.matches_at(text, stop);
            if (word_before || word_after) {
                continue;
            }
        }
        if (token.lstrip) {
            start = std::max(white_space_before(text, start), covered);  // spaces a previous match took stay there
        }
        if (token.rstrip) {
            stop = skip_white_space(text, stop);
        }
        if (covered < start) {
            stretches.push_back({covered, start, std::nullopt});
        }
        stretches.push_back({start, stop, token.id});
        covered = stop;
    }
    if (covered != text.size()) {
        stretches.push_back({covered, text.size(), std::nullopt});
    }
    return stretches;
}

}  // namespace vkf::text
