#pragma once
// Naive GPU attention (shaders/attention_naive.comp): scores, softmax and P.V as three
// dispatches over a float32 [batch, n_head, q_len, kv_len] scores buffer. It exists as the
// baseline the tiled op (host/ops/attention.hpp) is benchmarked against; its n x n buffer is
// exactly what the tiled op avoids, so it fails on shapes the tiled op still handles.

#include "host/ops/attention.hpp"
#include "host/spec/attention_params.hpp"
#include "runtime/context.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace vkf {

// Bytes of the float32 scores buffer for `shape` (saturates at UINT64_MAX).
std::uint64_t naive_attention_scores_bytes(const AttentionShape& shape);

// Why the naive op cannot run `params` on a device with `limits` (its scores pass binds more
// storage buffers than the device allows: 5, or 3 with the slope table and key counts after
// the scores where the device allows fewer than 5; or its scores buffer, tables included,
// cannot be bound as one storage-buffer range), or nullopt when it can. Assumes valid params.
std::optional<std::string> naive_attention_impossible(const ComputeLimits& limits, const AttentionParams& params,
                                                      const std::optional<PagedKv>& paged = std::nullopt);

class NaiveAttention {
public:
    // Validates params and head_dim; throws vkf::Error with naive_attention_impossible's
    // reason, or naming a tensor that does not fit one storage-buffer range. `paged`: a paged,
    // ragged batch as the Attention op takes it (AttentionOptions::paged, same conventions).
    // k_quant, v_quant: K and/or V block-quantized as in AttentionOptions (dtype F32, the
    // other side F16).
    NaiveAttention(Context& ctx, const AttentionParams& params, DType dtype,
                   std::optional<PagedKv> paged = std::nullopt, QuantFormat k_quant = QuantFormat::None,
                   QuantFormat v_quant = QuantFormat::None);
    // Q, K, V, O hold the default layout in the constructor's dtype (paged: Q and O q_rows
    // rows, K and V a pool of whole blocks); their sizes are checked. `sequences`: a paged
    // batch's sequence table (paged_sequence_table), else none. Records three dispatches (and
    // a copy of the sequence table after the scores, where PV reads it); the op's own scores
    // buffer is reused by every recording.
    void record(CommandList& list, BufferRange q, BufferRange k, BufferRange v, BufferRange o,
                BufferRange sequences = {}) const;
    // The float32 scores (naive_attention_scores_bytes), not counting tables after them.
    std::uint64_t scores_bytes() const { return naive_attention_scores_bytes(shape_); }

private:
    AttentionShape shape_;
    DType dtype_;
    QuantFormat k_quant_ = QuantFormat::None;
    QuantFormat v_quant_ = QuantFormat::None;
    std::uint64_t k_row_bytes_ = 0;  // bytes of a key row (all KV heads) of K and of V
    std::uint64_t v_row_bytes_ = 0;
    AttentionPush push_;
    std::uint32_t scores_workgroup_ = 0;
    std::uint32_t softmax_workgroup_ = 0;
    std::uint32_t pv_workgroup_ = 0;
    const Pipeline* scores_pipeline_ = nullptr;
    const Pipeline* softmax_pipeline_ = nullptr;
    const Pipeline* pv_pipeline_ = nullptr;
    Buffer slopes_;
    Buffer kv_lens_;
    // With packed_ or paged_, the slope table and the key counts (or the sequence table)
    // follow the scores.
    Buffer scores_;
    bool packed_ = false;  // fewer than 5 storage buffers per stage: the PACKED_TABLES scores pass
    std::optional<PagedKv> paged_;
    std::uint64_t max_range_ = 0;  // maxStorageBufferRange: a paged pool must fit one range
};

}  // namespace vkf
