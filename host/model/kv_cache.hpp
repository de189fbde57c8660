#pragma once
// The paged KV cache of a decoder on the device: per layer one K and one V pool of
// `blocks` blocks of `block_size` token rows [blocks * block_size, n_kv_head, head_dim] in
// the cache dtype, shared by every sequence of a Batch (host/model/batch.hpp). Which blocks
// are free and who holds the others is the Scheduler's (host/sched/kv_blocks.hpp).

#include "host/model/layer_range.hpp"
#include "host/quant/quant_format.hpp"
#include "host/spec/model_config.hpp"
#include "host/util/dtype.hpp"
#include "runtime/context.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace vkf {

class KvCache {
public:
    // Throws vkf::Error when one layer's pool is over the device's maxStorageBufferRange
    // (attention binds it whole), or for a dtype other than F16 and F32. A stage of a layer
    // split holds the pools of its `layers` only, still indexed by the model's layer numbers.
    // k_quant, v_quant: K and/or V in q8_0/q4_0 key rows (host/quant/kv_quant.hpp), the
    // other side in `dtype`, which must then be F16 (check_kv_cache_format).
    KvCache(Context& ctx, const ModelConfig& config, std::uint32_t blocks, std::uint32_t block_size, DType dtype,
            LayerRange layers, QuantFormat k_quant = QuantFormat::None, QuantFormat v_quant = QuantFormat::None);

    const Buffer& k(std::uint32_t layer) const { return k_.at(layer - layers_.begin); }
    const Buffer& v(std::uint32_t layer) const { return v_.at(layer - layers_.begin); }
    LayerRange layers() const { return layers_; }
    std::uint32_t block_size() const { return block_size_; }
    DType dtype() const { return dtype_; }  // of a side that is not quantized
    QuantFormat k_quant() const { return k_quant_; }
    QuantFormat v_quant() const { return v_quant_; }
    std::uint32_t block_count() const { return blocks_; }
    std::uint64_t device_bytes() const;

    // Records copies of block `from` into block `to` in every layer's K and V (copy on write):
    // the bytes as stored, quantized blocks and their scales included.
    void record_copy(CommandList& list, std::uint32_t from, std::uint32_t to) const;
    // The bytes of these blocks as stored: per layer, K of each block in the given order, then
    // V (a saved sequence's, host/model/sequence_state.hpp); write_blocks puts them back.
    // Runs of consecutive blocks move in one transfer. Throws vkf::Error for a block past the
    // pool or bytes of another size.
    std::vector<std::byte> read_blocks(Context& ctx, std::span<const std::uint32_t> blocks) const;
    void write_blocks(Context& ctx, std::span<const std::uint32_t> blocks, std::span<const std::byte> bytes) const;

private:
    std::uint64_t k_block_bytes_ = 0;  // one block of K, of V
    std::uint64_t v_block_bytes_ = 0;
    std::uint32_t block_size_ = 0;
    DType dtype_;
    QuantFormat k_quant_ = QuantFormat::None;
    QuantFormat v_quant_ = QuantFormat::None;
    LayerRange layers_;
    std::vector<Buffer> k_, v_;
    std::uint32_t blocks_ = 0;
};

}  // namespace vkf
