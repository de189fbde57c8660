#pragma once
// One sequence's block table over the KV pool (KvBlocks): logical block b holds the keys of
// positions b * block_size onwards. Without a key window the table grows a block at a time;
// with one it is a ring (logical block b at entry b % ring, window_ring_blocks long) whose
// blocks no query can see any more go back to the pool, so that positions count on for as
// long as asked in a bounded number of blocks. The table holds logical blocks first() ..
// end() - 1, one pool reference each, and drops them when it goes (RAII: a removed sequence
// frees the blocks no other sequence holds).

#include "host/sched/kv_blocks.hpp"
#include "host/sched/step_schedule.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace vkf {

struct BlockTableShape {
    std::uint32_t block_size = 16;
    std::uint32_t ring = 0;    // entries of a windowed table; 0: no window (it grows)
    std::uint32_t window = 0;  // keys a query sees before its own (0: all)
};

class BlockTable {
public:
    BlockTable(KvBlocks& pool, BlockTableShape shape);
    BlockTable(BlockTable&& other) noexcept;
    BlockTable& operator=(BlockTable&&) = delete;
    BlockTable(const BlockTable&) = delete;
    BlockTable& operator=(const BlockTable&) = delete;
    ~BlockTable();

    // The physical block of logical block `b` (first() <= b < end()).
    std::uint32_t block(std::uint32_t b) const;
    std::uint32_t first() const { return first_; }
    std::uint32_t end() const { return end_; }
    std::uint32_t held() const { return end_ - first_; }
    // The entries the sequence table carries (a ring's unused ones hold block 0: outside every
    // window, never read, but a valid index).
    const std::vector<std::uint32_t>& entries() const { return entries_; }

    // Takes `donor`'s logical blocks first .. end - 1 (one more reference each) into this
    // empty table: a prefix another sequence computed. Returns false, taking nothing, when the
    // donor no longer holds them all (its window freed some).
    bool share(const BlockTable& donor, std::uint32_t first, std::uint32_t end);
    // Takes `blocks` (one more reference each) as this empty table's logical blocks 0 ..: a
    // prefix from the prefix cache. Tables without a window only.
    void adopt(std::span<const std::uint32_t> blocks);
    // Room for up to `rows` more keys after `computed`: first the blocks no query from
    // `computed` on sees go back (window), then the partly filled block the next row goes into
    // is copied when another sequence holds it too (appended to `copies`), then blocks are
    // appended while the pool has some. Returns how many of the rows got room (0: blocked).
    std::uint32_t reserve(std::uint32_t computed, std::uint32_t rows, std::vector<BlockCopy>& copies);
    // Drops every block it holds (the table is empty afterwards). Throws vkf::Error when the
    // pool's counts say a block was not in use (a bug, never absorbed).
    void release();

private:
    std::uint32_t& entry(std::uint32_t b);
    void release_before(std::uint32_t first_seen);

    KvBlocks* pool_;  // null once moved from
    BlockTableShape shape_;
    std::vector<std::uint32_t> entries_;
    std::uint32_t first_ = 0;
    std::uint32_t end_ = 0;
};

}  // namespace vkf
