#pragma once
// The decoder families test_batch runs and test_batch_prefix_families runs again with the
// prefix cache: two layers each, head counts and sizes that are not powers of two, every
// family's own switches (GQA and MQA, qk_ln, clip_qkv, learned positions, Jais' scales with a
// trained length the test prompts pass, so dynamic alibi_scaling applies).

#include "host/spec/model_config.hpp"

namespace vkf::test::batch_families {

inline ModelConfig shape(ModelFamily family, std::uint32_t heads, std::uint32_t head_dim, std::uint32_t ffn) {
    return ModelConfig{.family = family,
                       .vocab_size = 523,
                       .hidden = heads * head_dim,
                       .n_layer = 2,
                       .n_head = heads,
                       .n_kv_head = heads,
                       .head_dim = head_dim,
                       .ffn_hidden = ffn};
}

inline ModelConfig bloom() {
    return shape(ModelFamily::Bloom, 6, 32, 4 * 6 * 32);
}

// Grouped-query MPT with qk_ln and clip_qkv: the separate QKV passes.
inline ModelConfig mpt_gqa() {
    ModelConfig c = shape(ModelFamily::Mpt, 6, 40, 512);
    c.n_kv_head = 2;
    c.qk_ln = true;
    c.clip_qkv = 0.5;
    return c;
}

// Multi-query MPT without ALiBi, learned positions.
inline ModelConfig mpt_mqa_positions() {
    ModelConfig c = shape(ModelFamily::Mpt, 4, 48, 384);
    c.n_kv_head = 1;
    c.alibi = false;
    c.learned_pos_emb = true;
    c.no_bias = true;
    c.max_seq_len = 700;
    return c;
}

inline ModelConfig falcon() {
    return shape(ModelFamily::Falcon, 5, 24, 4 * 5 * 24);
}

inline ModelConfig baichuan() {
    ModelConfig c = shape(ModelFamily::Baichuan, 5, 56, 424);
    c.no_bias = true;
    c.layer_norm_epsilon = 1e-6;
    c.tie_word_embeddings = false;
    return c;
}

inline ModelConfig jais() {
    ModelConfig c = shape(ModelFamily::Jais, 3, 72, 250);
    c.softmax_scale = 1.0 / 72;
    c.embedding_scale = 14.6;
    c.logit_scale = 2.22 * 0.0625;
    c.alibi_train_seq_len = 64u;
    return c;
}

}  // namespace vkf::test::batch_families
