#include "host/model/kv_cache.hpp"

#include "base/error.hpp"
#include "host/quant/kv_quant.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace vkf {

KvCache::KvCache(Context& ctx, const ModelConfig& config, std::uint32_t blocks, std::uint32_t block_size, DType dtype,
                 LayerRange layers, QuantFormat k_quant, QuantFormat v_quant)
    : block_size_(block_size), dtype_(dtype), k_quant_(k_quant), v_quant_(v_quant), layers_(layers), blocks_(blocks) {
    if (dtype != DType::F32 && dtype != DType::F16) {
        throw Error(std::string("KV cache: f32 or f16, not ") + to_string(dtype));
    }
    check_kv_cache_format(dtype, k_quant, v_quant, config.head_dim);
    if (blocks == 0 || block_size == 0) {
        throw Error("KV cache: needs at least one block of at least one token");
    }
    const std::uint32_t row_values = config.n_kv_head * config.head_dim;
    k_block_bytes_ = std::uint64_t{block_size} * kv_row_bytes(dtype, k_quant, row_values);
    v_block_bytes_ = std::uint64_t{block_size} * kv_row_bytes(dtype, v_quant, row_values);
    const std::uint64_t pool_bytes = std::max(k_block_bytes_, v_block_bytes_) * blocks;
    if (pool_bytes > ctx.limits().storage_buffer_range) {
        throw Error(fmt::format(
            "KV cache: {} blocks of {} tokens x {} heads of {} are {} bytes per layer, over the "
            "device's maxStorageBufferRange of {}; use fewer tokens",
            blocks, block_size, config.n_kv_head, config.head_dim, pool_bytes, ctx.limits().storage_buffer_range));
    }
    for (std::uint32_t l = layers.begin; l < layers.end; ++l) {
        k_.push_back(ctx.create_buffer(k_block_bytes_ * blocks, MemoryKind::Device, "K cache " + fmt::to_string(l)));
        v_.push_back(ctx.create_buffer(v_block_bytes_ * blocks, MemoryKind::Device, "V cache " + fmt::to_string(l)));
    }
}

std::uint64_t KvCache::device_bytes() const {
    return (k_block_bytes_ + v_block_bytes_) * blocks_ * k_.size();
}

void KvCache::record_copy(CommandList& list, std::uint32_t from, std::uint32_t to) const {
    const auto block = [&](const Buffer& b, std::uint64_t bytes, std::uint32_t index) {
        return BufferRange{.buffer = &b, .offset = bytes * index, .size = bytes};
    };
    for (std::size_t l = 0; l < k_.size(); ++l) {
        list.copy(block(k_[l], k_block_bytes_, from), block(k_[l], k_block_bytes_, to), "KV block copy");
        list.copy(block(v_[l], v_block_bytes_, from), block(v_[l], v_block_bytes_, to), "KV block copy");
    }
}

namespace {

// Consecutive runs of `blocks`: (index of its first in `blocks`, first block, length).
struct Run {
    std::size_t index;
    std::uint32_t block;
    std::uint32_t length;
};

std::vector<Run> runs_of(std::span<const std::uint32_t> blocks, std::uint32_t pool) {
    std::vector<Run> runs;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
        if (blocks[i] >= pool) {
            throw Error(fmt::format("KV cache: block {} is not below the pool's {}", blocks[i], pool));
        }
        if (!runs.empty() && runs.back().block + runs.back().length == blocks[i]) {
            ++runs.back().length;
        } else {
            runs.push_back({i, blocks[i], 1});
        }
    }
    return runs;
}

}  // namespace

std::vector<std::byte> KvCache::read_blocks(Context& ctx, std::span<const std::uint32_t> blocks) const {
    const std::vector<Run> runs = runs_of(blocks, blocks_);
    const std::uint64_t n = blocks.size();
    std::vector<std::byte> bytes((k_block_bytes_ + v_block_bytes_) * n * k_.size());
    std::uint64_t layer_at = 0;
    for (std::size_t l = 0; l < k_.size(); ++l) {
        for (const Run& run : runs) {
            ctx.download(k_[l],
                         std::span(bytes).subspan(layer_at + run.index * k_block_bytes_, run.length * k_block_bytes_),
                         run.block * k_block_bytes_);
            ctx.download(v_[l],
                         std::span(bytes).subspan(layer_at + n * k_block_bytes_ + run.index * v_block_bytes_,
                                                  run.length * v_block_bytes_),
                         run.block * v_block_bytes_);
        }
        layer_at += (k_block_bytes_ + v_block_bytes_) * n;
    }
    return bytes;
}

void KvCache::write_blocks(Context& ctx, std::span<const std::uint32_t> blocks,
                           std::span<const std::byte> bytes) const {
    const std::vector<Run> runs = runs_of(blocks, blocks_);
    const std::uint64_t n = blocks.size();
    const std::uint64_t expected = (k_block_bytes_ + v_block_bytes_) * n * k_.size();
    if (bytes.size() != expected) {
        throw Error(fmt::format("KV cache: {} bytes for {} blocks of {} layers; {} expected", bytes.size(), n,
                                k_.size(), expected));
    }
    std::uint64_t layer_at = 0;
    for (std::size_t l = 0; l < k_.size(); ++l) {
        for (const Run& run : runs) {
            ctx.upload(k_[l], bytes.subspan(layer_at + run.index * k_block_bytes_, run.length * k_block_bytes_),
                       run.block * k_block_bytes_);
            ctx.upload(
                v_[l],
                bytes.subspan(layer_at + n * k_block_bytes_ + run.index * v_block_bytes_, run.length * v_block_bytes_),
                run.block * v_block_bytes_);
        }
        layer_at += (k_block_bytes_ + v_block_bytes_) * n;
    }
}

}  // namespace vkf
