#include "host/sched/kv_blocks.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

namespace vkf {

std::uint32_t window_ring_blocks(std::uint32_t window, std::uint32_t chunk, std::uint32_t block_size) {
    const std::uint64_t keys = std::uint64_t{window} + chunk;
    return static_cast<std::uint32_t>((keys + block_size - 1) / block_size + 1);
}

KvBlocks::KvBlocks(std::uint32_t blocks) : refs_(blocks, 0) {
    free_.reserve(blocks);
    for (std::uint32_t b = blocks; b-- > 0;) {
        free_.push_back(b);
    }
}

void KvBlocks::check(std::uint32_t block) const {
    if (block >= refs_.size()) {
        throw Error(fmt::format("KV blocks: block {} is not below the pool's {}", block, refs_.size()));
    }
}

std::optional<std::uint32_t> KvBlocks::allocate() {
    if (free_.empty() && !(reclaim_ && reclaim_() && !free_.empty())) {
        return std::nullopt;
    }
    const std::uint32_t block = free_.back();
    free_.pop_back();
    refs_[block] = 1;
    return block;
}

void KvBlocks::retain(std::uint32_t block) {
    check(block);
    if (refs_[block] == 0) {
        throw Error(fmt::format("KV blocks: block {} is free and cannot be shared", block));
    }
    ++refs_[block];
}

void KvBlocks::release(std::uint32_t block) {
    check(block);
    if (refs_[block] == 0) {
        throw Error(fmt::format("KV blocks: block {} released but not in use", block));
    }
    if (--refs_[block] == 0) {
        free_.push_back(block);
    }
}

std::uint32_t KvBlocks::references(std::uint32_t block) const {
    check(block);
    return refs_[block];
}

}  // namespace vkf
