#include "host/text/vocab_index.hpp"

#include <bit>

namespace vkf::text {

VocabIndex::VocabIndex(const std::vector<std::string>& tokens)
    : slots_(std::bit_ceil(2 * tokens.size() + 2), 0), mask_(slots_.size() - 1) {
    for (std::size_t id = 0; id < tokens.size(); ++id) {
        if (tokens[id].empty()) {
            continue;  // an unused id (a vocabulary with gaps)
        }
        const std::uint64_t hash = std::hash<std::string_view>{}(tokens[id]);
        std::size_t slot = hash & mask_;
        while (slots_[slot] != 0) {
            slot = (slot + 1) & mask_;
        }
        slots_[slot] = (hash & 0xFFFFFFFF00000000ull) | (id + 1);
    }
}

std::optional<TokenId> VocabIndex::find(const std::vector<std::string>& tokens, std::string_view token) const {
    const std::uint64_t hash = std::hash<std::string_view>{}(token);
    for (std::size_t slot = hash & mask_; slots_[slot] != 0; slot = (slot + 1) & mask_) {
        const std::uint64_t entry = slots_[slot];
        if ((entry >> 32) == (hash >> 32)) {
            const auto id = static_cast<TokenId>((entry & 0xFFFFFFFFull) - 1);
            if (tokens[id] == token) {
                return id;
            }
        }
    }
    return std::nullopt;
}

}  // namespace vkf::text
