#pragma once
// Parameters of one attention call, shared by the CPU reference and the GPU op.
//
// Layout (docs/DESIGN.md): Q is [batch, q_len, n_head, head_dim], K and V are
// [batch, kv_len, n_kv_head, head_dim], row-major; the output has Q's shape. Query head h
// reads KV head h / (n_head / n_kv_head).
//
// Positions: batch b has L_b valid keys (kv_lens[b], or kv_len when kv_lens is empty);
// keys j >= L_b are masked. Query row i sits at absolute position p_i = L_b - q_len + i,
// which is negative for padding rows when q_len > L_b. A causal mask also hides keys
// j > p_i. ALiBi biases use the absolute positions p_i and j.
//
// Key window (local attention), as llm-foundry's MPT defines attn_config.sliding_window_size
// (llmfoundry/models/layers/attention.py, scaled_multihead_dot_product_attention: the mask
// keeps torch.tril(diagonal=W) and torch.triu(diagonal=-W) of the [s_q, s_k] ones, i.e.
// j - i <= W and i - j <= W; flash-attn gets window_size=(W, W)): with window W > 0, query
// position p_i sees key j only when |p_i - j| <= W, which under a causal mask leaves
// p_i - W <= j <= p_i: itself and the W keys before it. 0 = full attention.
//
// A query row whose every key is masked has no softmax to take; its output is all zeros
// (not NaN), so padding rows are harmless.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "host/spec/alibi.hpp"

namespace vkf {

struct AttentionShape {
    std::uint32_t batch, q_len, kv_len, n_head, n_kv_head, head_dim;
};

struct AttentionParams {
    AttentionShape shape;
    MaskMode mask = MaskMode::Causal;
    AlibiMode alibi = AlibiMode::Causal;
    float max_bias = 8.0f;
    // The initializers below let designated initializers leave these out without
    // -Wmissing-field-initializers warnings.
    std::optional<float> scale = std::nullopt;  // default 1/sqrt(head_dim)
    // Explicit per-head slope table (MPT, learned slopes); empty = formula from max_bias.
    std::span<const float> slopes = {};
    // Per-batch valid key lengths; empty = kv_len for every batch.
    std::span<const std::uint32_t> kv_lens = {};
    // Jais' dynamic alibi_scaling: with L valid keys, every slope is multiplied by
    // train_len / L when L > train_len. 0: off.
    std::uint32_t alibi_train_len = 0;
    // Key window W (above); 0: full attention. At most kMaxAttentionWindow.
    std::uint32_t window = 0;
};

// The kernels compare positions as 32-bit signed integers.
inline constexpr std::uint32_t kMaxAttentionWindow = 0x3fffffffu;

// The keys [first, end) that query position `position` may see among `valid_keys` keys
// (masks and window as above; empty when first >= end).
struct KeyRange {
    std::int64_t first, end;
};
KeyRange visible_keys(const AttentionParams& params, std::int64_t position, std::uint32_t valid_keys);

// The softmax scale: params.scale when given, else 1/sqrt(head_dim) rounded to float.
float effective_scale(const AttentionParams& params);

// Throws vkf::Error naming the first problem found: a zero dimension, n_head not a
// multiple of n_kv_head, a slope table or kv_lens array of the wrong size, a kv_lens entry
// beyond kv_len, a non-finite scale, max_bias or slope, an unknown enum value, a window over
// kMaxAttentionWindow, or element counts that overflow size_t. Supported head_dim values are the GPU op's business.
void validate(const AttentionParams& params);

// The helpers below assume validate() has passed.

// Element counts of Q (and of the output) and of K (and of V).
std::size_t q_element_count(const AttentionShape& shape);
std::size_t kv_element_count(const AttentionShape& shape);

// The KV head that query head `head` reads.
std::uint32_t kv_head_of(const AttentionShape& shape, std::uint32_t head);

// Valid key count L_b of batch `batch`.
std::uint32_t kv_len_of(const AttentionParams& params, std::uint32_t batch);

// ALiBi slope of `head`: the table entry when a table is given, else the formula.
double head_slope(const AttentionParams& params, std::uint32_t head);
// The factor alibi_train_len applies with `valid_keys` keys: train_len / L past it, else 1.
double alibi_length_factor(const AttentionParams& params, std::uint32_t valid_keys);

}  // namespace vkf
