#include "host/text/wordpiece_model.hpp"

#include "host/text/utf8.hpp"

#include <algorithm>

namespace vkf::text {
namespace {

bool is_continuation_byte(char byte) {
    return (static_cast<unsigned char>(byte) & 0xC0) == 0x80;
}

}  // namespace

WordPieceModel::WordPieceModel(std::vector<std::string> tokens, WordPieceOptions options)
    : tokens_(std::move(tokens)),
      entries_(static_cast<std::size_t>(
          std::count_if(tokens_.begin(), tokens_.end(), [](const std::string& t) { return !t.empty(); }))),
      index_(tokens_),
      options_(std::move(options)) {
    for (const std::string& token : tokens_) {
        longest_token_ = std::max(longest_token_, token.size());
    }
}

std::optional<TokenId> WordPieceModel::find(std::string_view token) const {
    return index_.find(tokens_, token);
}

void WordPieceModel::tokenize(std::string_view piece, std::vector<TokenId>& out) const {
    const std::size_t characters = static_cast<std::size_t>(
        std::count_if(piece.begin(), piece.end(), [](char b) { return !is_continuation_byte(b); }));
    if (characters > options_.max_input_chars_per_word) {
        out.push_back(options_.unk);
        return;
    }
    const std::size_t first = out.size();
    std::string prefixed;
    for (std::size_t start = 0; start < piece.size();) {
        // The longest candidate first, one character shorter each time.
        std::size_t end = std::min(piece.size(), start + longest_token_);
        while (end > start && end < piece.size() && is_continuation_byte(piece[end])) {
            --end;
        }
        std::optional<TokenId> id;
        for (; end > start; end = utf8_previous(piece, end)) {
            std::string_view candidate = piece.substr(start, end - start);
            if (start > 0) {
                prefixed.assign(options_.continuing_subword_prefix);
                prefixed += candidate;
                candidate = prefixed;
            }
            if ((id = find(candidate))) {
                break;
            }
        }
        if (!id) {
            // Hugging Face gives the whole piece one unk, not only the part that did not match.
            out.resize(first);
            out.push_back(options_.unk);
            return;
        }
        out.push_back(*id);
        start = end;
    }
}

}  // namespace vkf::text
