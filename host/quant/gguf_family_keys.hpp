#pragma once
// The "{arch}.*" hyperparameter keys llama.cpp's converter writes for each decoder family
// vkf-quantize --format gguf writes, key for key as its set_gguf_parameters does
// (conversion/bloom.py, mpt.py, refact.py, baichuan.py, jais.py), from config.json where the
// converter reads config.json (docs/QUANTIZATION.md lists them all):
//   bloom: context_length (seq_length, else the width), embedding/feed_forward_length,
//          block_count, head_count, head_count_kv, layer_norm_epsilon.
//   mpt:   context_length (max_seq_len), embedding_length, block_count, feed_forward_length
//          4 x d_model (whatever expansion_ratio is: the reader takes the MLP width from
//          ffn_up), head_count, head_count_kv only when attn_config.kv_n_heads is set,
//          layer_norm_epsilon 1e-5 (the converter's constant), clamp_kqv when clip_qkv is set,
//          max_alibi_bias (alibi_bias_max, 0 without ALiBi).

#include "host/io/gguf.hpp"
#include "host/spec/model_config.hpp"

#include <filesystem>
#include <string_view>
#include <vector>

namespace vkf {

// llama.cpp's architecture name of `family` ("bloom", "mpt", "refact", "baichuan", "jais"). Throws vkf::Error naming
// the family and those written for any other.
std::string_view gguf_written_architecture(ModelFamily family);

// The keys for the checkpoint directory `dir` whose resolved configuration is `config`.
std::vector<GgufKeyValue> gguf_family_parameters(const std::filesystem::path& dir, const ModelConfig& config);

}  // namespace vkf
