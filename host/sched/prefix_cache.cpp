#include "host/sched/prefix_cache.hpp"

#include "host/util/splitmix64.hpp"

#include <algorithm>

namespace vkf {

PrefixCache::PrefixCache(KvBlocks& pool) : pool_(pool) {}

PrefixCache::~PrefixCache() {
    for (const auto& [hash, entry] : entries_) {
        pool_.release(entry.block);
    }
}

std::uint64_t PrefixCache::salt(std::string_view text) {
    std::uint64_t h = splitmix64_mix(text.size() + kGoldenGamma);
    for (const char c : text) {
        h = splitmix64_mix(h + static_cast<unsigned char>(c) + kGoldenGamma);
    }
    return h != 0 ? h : 1;
}

std::uint64_t PrefixCache::chain(std::uint64_t parent, std::span<const std::uint32_t> tokens) {
    // Each token mixed in after the parent: chains of similar prompts spread over the table. A
    // collision would still be caught: find() compares the parent and the tokens.
    std::uint64_t h = splitmix64_mix(parent ^ kGoldenGamma);
    for (std::uint32_t t : tokens) {
        h = splitmix64_mix(h + t + kGoldenGamma);
    }
    return h;
}

void PrefixCache::keep(std::uint64_t hash, std::uint64_t parent, std::span<const std::uint32_t> tokens,
                       std::span<const std::uint32_t> chunk_ends, std::uint32_t block, std::uint32_t index) {
    if (const auto it = entries_.find(hash); it != entries_.end()) {
        // Used again: as recent as a new block. Callers keep a chain last block first, so a
        // chain that served a hit still loses its later blocks first.
        uses_.splice(uses_.end(), uses_, it->second.use);
        return;
    }
    pool_.retain(block);
    uses_.push_back(hash);
    entries_.emplace(hash, Entry{.block = block,
                                 .index = index,
                                 .parent = parent,
                                 .tokens = {tokens.begin(), tokens.end()},
                                 .chunk_ends = {chunk_ends.begin(), chunk_ends.end()},
                                 .use = std::prev(uses_.end())});
}

const PrefixCache::Entry* PrefixCache::find(std::uint64_t hash, std::uint64_t parent,
                                            std::span<const std::uint32_t> tokens) {
    auto it = entries_.find(hash);
    if (it == entries_.end() || it->second.parent != parent ||
        !std::equal(tokens.begin(), tokens.end(), it->second.tokens.begin(), it->second.tokens.end())) {
        return nullptr;
    }
    uses_.splice(uses_.end(), uses_, it->second.use);
    return &it->second;
}

bool PrefixCache::evict_one() {
    for (auto use = uses_.begin(); use != uses_.end(); ++use) {
        auto it = entries_.find(*use);
        if (pool_.references(it->second.block) == 1) {
            pool_.release(it->second.block);
            entries_.erase(it);
            uses_.erase(use);
            ++stats_.evictions;
            return true;
        }
    }
    return false;
}

void PrefixCache::count_lookup(std::uint32_t hit_tokens) {
    ++stats_.lookups;
    stats_.hit_tokens += hit_tokens;
}

std::uint32_t PrefixCache::reclaimable() const {
    return static_cast<std::uint32_t>(std::count_if(
        entries_.begin(), entries_.end(), [&](const auto& e) { return pool_.references(e.second.block) == 1; }));
}

}  // namespace vkf
