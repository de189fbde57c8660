#include "host/model/kv_cache.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <string>

namespace vkf {

KvCache::KvCache(Context& ctx, const ModelConfig& config, std::uint32_t blocks, std::uint32_t block_size, DType dtype,
                 LayerRange layers)
    : block_size_(block_size), dtype_(dtype), layers_(layers), blocks_(blocks) {
    if (dtype != DType::F32 && dtype != DType::F16) {
        throw Error(std::string("KV cache: f32 or f16, not ") + to_string(dtype));
    }
    if (blocks == 0 || block_size == 0) {
        throw Error("KV cache: needs at least one block of at least one token");
    }
    const std::uint64_t kv_dim = std::uint64_t{config.n_kv_head} * config.head_dim;
    block_bytes_ = std::uint64_t{block_size} * kv_dim * element_size(dtype);
    const std::uint64_t pool_bytes = block_bytes_ * blocks;
    if (pool_bytes > ctx.limits().storage_buffer_range) {
        throw Error("KV cache: " + fmt::to_string(blocks) + " blocks of " + fmt::to_string(block_size) + " tokens x " +
                    fmt::to_string(kv_dim) + " " + to_string(dtype) + " values per layer are " +
                    fmt::to_string(pool_bytes) + " bytes, over the device's maxStorageBufferRange of " +
                    fmt::to_string(ctx.limits().storage_buffer_range) + "; use fewer tokens");
    }
    for (std::uint32_t l = layers.begin; l < layers.end; ++l) {
        k_.push_back(ctx.create_buffer(pool_bytes, MemoryKind::Device, "K cache " + fmt::to_string(l)));
        v_.push_back(ctx.create_buffer(pool_bytes, MemoryKind::Device, "V cache " + fmt::to_string(l)));
    }
}

std::uint64_t KvCache::device_bytes() const {
    return 2 * block_bytes_ * blocks_ * k_.size();
}

void KvCache::record_copy(CommandList& list, std::uint32_t from, std::uint32_t to) const {
    const auto block = [&](const Buffer& b, std::uint32_t index) {
        return BufferRange{.buffer = &b, .offset = block_bytes_ * index, .size = block_bytes_};
    };
    for (std::size_t l = 0; l < k_.size(); ++l) {
        list.copy(block(k_[l], from), block(k_[l], to), "KV block copy");
        list.copy(block(v_[l], from), block(v_[l], to), "KV block copy");
    }
}

}  // namespace vkf
