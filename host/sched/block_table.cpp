#include "host/sched/block_table.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>

namespace vkf {

BlockTable::BlockTable(KvBlocks& pool, BlockTableShape shape) : pool_(&pool), shape_(shape) {
    if (shape_.block_size == 0) {
        throw Error("block table: block_size must be at least 1");
    }
    // A ring's unused entries hold block 0 from the start, so that the table the kernels read
    // is always whole.
    entries_.assign(shape_.ring, 0);
}

BlockTable::BlockTable(BlockTable&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)),
      shape_(other.shape_),
      entries_(std::move(other.entries_)),
      first_(other.first_),
      end_(other.end_) {}

BlockTable::~BlockTable() {
    if (pool_ == nullptr) {
        return;
    }
    try {
        release();
    } catch (const Error&) {
        // Only counts already wrong throw here; Scheduler::remove releases first and reports
        // them, and a destructor cannot (a Scheduler going away takes its pool with it).
    }
}

std::uint32_t& BlockTable::entry(std::uint32_t b) {
    return shape_.ring == 0 ? entries_.at(b) : entries_[b % shape_.ring];
}

std::uint32_t BlockTable::block(std::uint32_t b) const {
    if (b < first_ || b >= end_) {
        throw Error(fmt::format("block table: logical block {} is not held (it holds {} .. {})", b, first_, end_));
    }
    return shape_.ring == 0 ? entries_[b] : entries_[b % shape_.ring];
}

void BlockTable::release_before(std::uint32_t first_seen) {
    // A block another sequence holds too (a shared prefix) stays in the pool for it: KvBlocks::release()
    // only drops this table's reference.
    while (first_ < std::min(first_seen, end_)) {
        pool_->release(entry(first_));
        ++first_;
    }
}

void BlockTable::release() {
    release_before(end_);
}

bool BlockTable::share(const BlockTable& donor, std::uint32_t first, std::uint32_t end) {
    if (end_ != 0) {
        throw Error("block table: a prefix is shared into an empty table only");
    }
    if (first < donor.first_ || end > donor.end_) {
        return false;
    }
    for (std::uint32_t b = first; b < end; ++b) {
        const std::uint32_t shared = donor.block(b);
        pool_->retain(shared);
        if (shape_.ring == 0) {
            entries_.push_back(shared);
        } else {
            entry(b) = shared;
        }
    }
    first_ = first;
    end_ = end;
    return true;
}

void BlockTable::adopt(std::span<const std::uint32_t> blocks) {
    if (end_ != 0 || shape_.ring != 0) {
        throw Error("block table: cached blocks are adopted into an empty table without a window only");
    }
    for (std::uint32_t block : blocks) {
        pool_->retain(block);
        entries_.push_back(block);
    }
    end_ = static_cast<std::uint32_t>(blocks.size());
}

std::uint32_t BlockTable::reserve(std::uint32_t computed, std::uint32_t rows, std::vector<BlockCopy>& copies) {
    const std::uint32_t bs = shape_.block_size;
    if (shape_.window != 0 && computed > shape_.window) {
        // A query at `computed` sees keys computed - window onwards; the blocks wholly before
        // them are read by no later step of this sequence.
        release_before((computed - shape_.window) / bs);
    }
    if (computed % bs != 0) {
        // The block the next row goes into is partly filled; when another sequence holds it
        // too, this one writes into a copy, so that what the other computed is never changed.
        std::uint32_t& block = entry(computed / bs);
        if (pool_->references(block) > 1) {
            const std::optional<std::uint32_t> fresh = pool_->allocate();
            if (!fresh) {
                return 0;
            }
            copies.push_back(BlockCopy{.from = block, .to = *fresh});
            pool_->release(block);
            block = *fresh;
        }
    }
    // With a window, rows <= chunk keep the ring's span within its entries (window_ring_blocks).
    while (std::uint64_t{end_} * bs < std::uint64_t{computed} + rows) {
        const std::optional<std::uint32_t> fresh = pool_->allocate();
        if (!fresh) {
            return static_cast<std::uint32_t>(std::uint64_t{end_} * bs - computed);
        }
        if (shape_.ring == 0) {
            entries_.push_back(*fresh);
        } else {
            entry(end_) = *fresh;
        }
        ++end_;
    }
    return rows;
}

}  // namespace vkf
