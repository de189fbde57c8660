#pragma once
// Looking token strings up: the models' vocabularies and the tokenizer's other string tables.

#include "host/text/tokenizer.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vkf::text {

// Hashing of strings that std::unordered_map can look up with a std::string_view.
struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIndex = std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>>;

// Token string -> id for strings held in a vector (id -> string): open addressing over 64-bit
// slots (hash bits, id + 1), so a lookup reads one slot and one string. Loading a 250k-token
// vocabulary and its merges makes a million lookups.
class VocabIndex {
public:
    explicit VocabIndex(const std::vector<std::string>& tokens);
    std::optional<TokenId> find(const std::vector<std::string>& tokens, std::string_view token) const;

private:
    std::vector<std::uint64_t> slots_;  // 0: empty
    std::size_t mask_ = 0;
};

}  // namespace vkf::text
