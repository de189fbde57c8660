#pragma once
// The small BLOOM and MPT configurations the model, quantization and checkpoint suites
// share: big enough for every code path (two layers, several heads, widths that are whole
// 32-weight blocks), small enough for the CPU reference to take milliseconds.

#include "host/spec/model_config.hpp"

#include <optional>

namespace vkf::test {

// 2 layers, hidden 256, 8 heads of 32, vocab 1009 (prime).
inline ModelConfig small_bloom() {
    return ModelConfig{.family = ModelFamily::Bloom,
                       .vocab_size = 1009,
                       .hidden = 256,
                       .n_layer = 2,
                       .n_head = 8,
                       .n_kv_head = 8,
                       .head_dim = 32,
                       .ffn_hidden = 1024};
}

// 2 layers, hidden 384, 12 heads of 32, vocab 997 (prime).
inline ModelConfig small_mpt(bool no_bias, std::optional<double> clip_qkv) {
    return ModelConfig{.family = ModelFamily::Mpt,
                       .vocab_size = 997,
                       .hidden = 384,
                       .n_layer = 2,
                       .n_head = 12,
                       .n_kv_head = 12,
                       .head_dim = 32,
                       .ffn_hidden = 1536,
                       .no_bias = no_bias,
                       .clip_qkv = clip_qkv};
}

}  // namespace vkf::test
