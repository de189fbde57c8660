#include "host/text/bpe_model.hpp"

#include "host/text/utf8.hpp"

#include <algorithm>
#include <cstdio>
#include <queue>

namespace vkf::text {

// Pieces shorter than kMaxCachedBytes, up to kCapacity of them (then no more are added), as
// Hugging Face's cache does (it keeps 10000).
struct BpeModel::Cache {
    static constexpr std::size_t kMaxCachedBytes = 256;
    static constexpr std::size_t kCapacity = 1 << 16;
    std::mutex mutex;
    std::unordered_map<std::string, std::vector<TokenId>, StringHash, std::equal_to<>> ids;
};

BpeModel::BpeModel(std::vector<std::string> tokens)
    : tokens_(std::move(tokens)),
      entries_(static_cast<std::size_t>(
          std::count_if(tokens_.begin(), tokens_.end(), [](const std::string& t) { return !t.empty(); }))),
      index_(tokens_),
      cache_(std::make_unique<Cache>()) {}

BpeModel::BpeModel(BpeModel&&) noexcept = default;
BpeModel::~BpeModel() = default;

void BpeModel::add_merge(TokenId left, TokenId right, TokenId merged) {
    merges_[(std::uint64_t{left} << 32) | right] = Merge{next_rank_++, merged};
}

std::optional<TokenId> BpeModel::find(std::string_view token) const {
    return index_.find(tokens_, token);
}

const BpeModel::Merge* BpeModel::find_merge(TokenId left, TokenId right) const {
    const auto it = merges_.find((std::uint64_t{left} << 32) | right);
    return it == merges_.end() ? nullptr : &it->second;
}

void BpeModel::tokenize(std::string_view piece, std::vector<TokenId>& out) const {
    if (options_.ignore_merges) {
        if (const std::optional<TokenId> id = find(piece)) {
            out.push_back(*id);
            return;
        }
    }
    const bool cacheable = piece.size() < Cache::kMaxCachedBytes;
    if (cacheable) {
        const std::lock_guard lock(cache_->mutex);
        if (const auto it = cache_->ids.find(piece); it != cache_->ids.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    std::vector<TokenId> ids = merge_piece(piece);
    out.insert(out.end(), ids.begin(), ids.end());
    if (cacheable) {
        const std::lock_guard lock(cache_->mutex);
        if (cache_->ids.size() < Cache::kCapacity) {
            cache_->ids.emplace(std::string(piece), std::move(ids));
        }
    }
}

std::vector<TokenId> BpeModel::merge_piece(std::string_view piece) const {
    // Symbols in a doubly linked list over a vector; a merged-away symbol gets size 0.
    struct Symbol {
        TokenId id;
        int prev;
        int next;
        std::size_t size;
    };
    std::vector<Symbol> symbols;
    const auto add = [&](TokenId id, std::size_t size) {
        const int index = static_cast<int>(symbols.size());
        symbols.push_back({id, index - 1, -1, size});
        if (index > 0) {
            symbols[index - 1].next = index;
        }
    };

    // One symbol per character (with the prefix and suffix where configured); unknown characters
    // become their byte tokens, or unk, or nothing.
    struct PendingUnk {
        bool pending = false;
        std::size_t size = 0;  // the bytes it covers
    } unk;
    std::string with_affixes;
    for (std::size_t pos = 0; pos < piece.size();) {
        const std::size_t size = utf8_char(piece, pos).size;
        const bool first = pos == 0;
        const bool last = pos + size == piece.size();
        std::string_view s = piece.substr(pos, size);
        pos += size;
        if ((!first && !options_.continuing_subword_prefix.empty()) || (last && !options_.end_of_word_suffix.empty())) {
            with_affixes.clear();
            if (!first) {
                with_affixes += options_.continuing_subword_prefix;
            }
            with_affixes += s;
            if (last) {
                with_affixes += options_.end_of_word_suffix;
            }
            s = with_affixes;
        }
        if (const std::optional<TokenId> id = find(s)) {
            if (unk.pending) {
                add(*options_.unk, unk.size);
                unk.pending = false;
            }
            add(*id, size);
            continue;
        }
        if (options_.byte_fallback) {
            std::vector<TokenId> bytes;
            for (const char b : s) {
                char name[8];
                std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned char>(b));
                if (const std::optional<TokenId> id = find(name)) {
                    bytes.push_back(*id);
                } else {
                    bytes.clear();
                    break;
                }
            }
            if (!bytes.empty()) {
                // As in Hugging Face, a pending unk is not flushed here: it follows these bytes.
                for (const TokenId id : bytes) {
                    add(id, 1);
                }
                continue;
            }
        }
        if (options_.unk) {
            if (unk.pending && options_.fuse_unk) {
                unk.size += size;
            } else {
                if (unk.pending) {
                    add(*options_.unk, unk.size);
                }
                unk = {true, size};
            }
        }
    }
    if (unk.pending) {
        add(*options_.unk, unk.size);
    }

    // The lowest rank first, then the leftmost position.
    struct Candidate {
        std::uint32_t rank;
        int pos;
        TokenId merged;
        bool operator>(const Candidate& other) const {
            return rank != other.rank ? rank > other.rank : pos > other.pos;
        }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
        if (const Merge* m = find_merge(symbols[i].id, symbols[i + 1].id)) {
            queue.push({m->rank, static_cast<int>(i), m->merged});
        }
    }
    while (!queue.empty()) {
        const Candidate top = queue.top();
        queue.pop();
        Symbol& left = symbols[top.pos];
        if (left.size == 0 || left.next == -1) {
            continue;
        }
        const int right_pos = left.next;
        const Symbol right = symbols[right_pos];
        // The pair may have changed since this candidate was queued.
        const Merge* current = find_merge(left.id, right.id);
        if (current == nullptr || current->merged != top.merged) {
            continue;
        }
        left.id = top.merged;
        left.size += right.size;
        left.next = right.next;
        symbols[right_pos].size = 0;
        if (right.next != -1) {
            symbols[right.next].prev = top.pos;
        }
        if (left.prev != -1) {
            if (const Merge* m = find_merge(symbols[left.prev].id, left.id)) {
                queue.push({m->rank, left.prev, m->merged});
            }
        }
        if (left.next != -1) {
            if (const Merge* m = find_merge(left.id, symbols[left.next].id)) {
                queue.push({m->rank, top.pos, m->merged});
            }
        }
    }

    std::vector<TokenId> ids;
    for (const Symbol& s : symbols) {
        if (s.size != 0) {
            ids.push_back(s.id);
        }
    }
    return ids;
}

}  // namespace vkf::text
