#pragma once
// The blocks of a paged KV cache, on the host: which of the pool's fixed-size blocks are free,
// and how many sequences hold each of the others. A sequence's keys live in the blocks of its
// block table; two sequences with a common prompt prefix hold the same blocks (each a
// reference), and a sequence about to write into a block it shares takes a copy first
// (copy on write, host/sched/block_table.hpp), so that what the other computed is never changed.

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace vkf {

// Blocks one sequence's table holds as a ring under a key window of `window` tokens (0: full
// attention, which needs no ring): a step of up to `chunk` rows starting at position p reads
// keys p - window .. p + chunk - 1, which span at most ceil((window + chunk) / block_size) + 1
// blocks. Older blocks no query can see any more are freed, so the ring's slots are reused
// and a sequence generates for as long as asked in this many blocks.
std::uint32_t window_ring_blocks(std::uint32_t window, std::uint32_t chunk, std::uint32_t block_size);

class KvBlocks {
public:
    explicit KvBlocks(std::uint32_t blocks);

    // A free block with one reference, or nullopt when none is left (after asking the reclaimer).
    std::optional<std::uint32_t> allocate();
    // Asked for a block when none is free: it releases one it holds (a prefix cache's least
    // recently used block) and returns true, or returns false when it has none to give.
    void set_reclaimer(std::function<bool()> reclaim) { reclaim_ = std::move(reclaim); }
    // One more holder of a block in use.
    void retain(std::uint32_t block);
    // One holder fewer; the block is free again after its last. Throws vkf::Error for a
    // block that is not in use (a double free is a bug, never silently absorbed).
    void release(std::uint32_t block);

    std::uint32_t references(std::uint32_t block) const;
    std::uint32_t total() const { return static_cast<std::uint32_t>(refs_.size()); }
    std::uint32_t free() const { return static_cast<std::uint32_t>(free_.size()); }
    std::uint32_t used() const { return total() - free(); }

private:
    void check(std::uint32_t block) const;

    std::vector<std::uint32_t> refs_;  // per block: its holders, 0 when free
    std::vector<std::uint32_t> free_;  // a stack; the lowest ids are taken first
    std::function<bool()> reclaim_;
};

}  // namespace vkf
