#pragma once
// Full KV blocks kept after the sequences that computed them end (issue 42): a chat client
// sends the whole conversation again every turn, and the turns before the last are blocks a
// finished sequence computed. A block is known by the hash of its chain: its parent block's
// hash (for the first block, the sequence's cache salt) and its own tokens, so that a hit
// means the same tokens at the same positions after the same prefix (vLLM's automatic prefix
// caching). ALiBi keys carry no position, but a block is only ever taken at the position it
// was computed at. What else makes K/V differ for the same tokens is fixed per cache: one
// Scheduler has one KV dtype and one model; under Jais' dynamic scaling the keys depend on the
// chunks that computed them too, so a block keeps the chunk ends it was computed with and the
// sequence taking it inherits them (as with a live shared prefix, docs/DESIGN.md).
//
// The cache holds one pool reference per block. A block that only the cache holds is
// reclaimable: KvBlocks takes the least recently used of them when it has no free block. A
// sequence's blocks are kept when it ends, last block first (those it took from the cache
// again, as used now), so a chain's later blocks go before its earlier ones (an earlier
// block is what every longer prompt needs).

#include "host/sched/kv_blocks.hpp"

#include <cstdint>
#include <list>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vkf {

struct PrefixCacheStats {
    std::uint64_t lookups = 0;     // prompts looked up
    std::uint64_t hit_tokens = 0;  // prompt tokens taken from the cache
    std::uint64_t evictions = 0;   // blocks given back to the pool
};

class PrefixCache {
public:
    struct Entry {
        std::uint32_t block = 0;
        std::uint32_t index = 0;  // its logical block in the sequences that hold it
        std::uint64_t parent = 0;
        std::vector<std::uint32_t> tokens;      // the block's, block_size of them
        std::vector<std::uint32_t> chunk_ends;  // key counts after the steps that computed it, within the block
        std::list<std::uint64_t>::iterator use;
    };

    explicit PrefixCache(KvBlocks& pool);
    ~PrefixCache();
    PrefixCache(const PrefixCache&) = delete;
    PrefixCache& operator=(const PrefixCache&) = delete;

    // The salt of a text (vkf-server's cache_salt field): never 0, the unsalted cache's.
    static std::uint64_t salt(std::string_view text);
    // The hash of a block holding `tokens` after the block hashed `parent` (the salt for a first block).
    static std::uint64_t chain(std::uint64_t parent, std::span<const std::uint32_t> tokens);

    // Keeps `block` (one reference more) under `hash`. A hash kept already keeps its block,
    // marked as used now.
    void keep(std::uint64_t hash, std::uint64_t parent, std::span<const std::uint32_t> tokens,
              std::span<const std::uint32_t> chunk_ends, std::uint32_t block, std::uint32_t index);
    // The entry kept under `hash` for `tokens` after `parent`, marked as used now; nullptr when none.
    const Entry* find(std::uint64_t hash, std::uint64_t parent, std::span<const std::uint32_t> tokens);
    // Gives the least recently used block only the cache holds back to the pool; false when none.
    bool evict_one();
    void count_lookup(std::uint32_t hit_tokens);

    std::uint32_t size() const { return static_cast<std::uint32_t>(entries_.size()); }
    // Blocks only the cache holds: free for the asking.
    std::uint32_t reclaimable() const;
    const PrefixCacheStats& stats() const { return stats_; }
    const std::unordered_map<std::uint64_t, Entry>& entries() const { return entries_; }

private:
    KvBlocks& pool_;
    std::unordered_map<std::uint64_t, Entry> entries_;
    std::list<std::uint64_t> uses_;  // hashes, least recently used first
    PrefixCacheStats stats_;
};

}  // namespace vkf
