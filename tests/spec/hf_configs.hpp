#pragma once
// Two real config.json files, bigscience/bloom-560m's and mosaicml/mpt-7b's, for the suites
// that parse them (test_model_config) and write them back (test_model_checkpoint).

#include <string_view>

namespace vkf::test {

// bigscience/bloom-560m's config.json.
inline constexpr std::string_view kBloom560m = R"({
  "_name_or_path": "bigscience/bloom-560m",
  "apply_residual_connection_post_layernorm": false,
  "architectures": [
    "BloomForCausalLM"
  ],
  "attention_dropout": 0.0,
  "attention_softmax_in_fp32": true,
  "bias_dropout_fusion": true,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_dropout": 0.0,
  "hidden_size": 1024,
  "initializer_range": 0.02,
  "layer_norm_epsilon": 1e-05,
  "masked_softmax_fusion": true,
  "model_type": "bloom",
  "n_head": 16,
  "n_inner": null,
  "n_layer": 24,
  "offset_alibi": 100,
  "pad_token_id": 3,
  "pretraining_tp": 1,
  "skip_bias_add": true,
  "skip_bias_add_qkv": false,
  "slow_but_exact": false,
  "torch_dtype": "float16",
  "transformers_version": "4.27.0.dev0",
  "unk_token_id": 0,
  "use_cache": true,
  "vocab_size": 250880
}
)";

// mosaicml/mpt-7b's config.json.
inline constexpr std::string_view kMpt7b = R"({
  "architectures": [
    "MPTForCausalLM"
  ],
  "attn_config": {
    "alibi": true,
    "alibi_bias_max": 8,
    "attn_impl": "torch",
    "attn_pdrop": 0,
    "attn_type": "multihead_attention",
    "attn_uses_sequence_id": false,
    "clip_qkv": null,
    "prefix_lm": false,
    "qk_ln": false,
    "softmax_scale": null
  },
  "auto_map": {
    "AutoConfig": "configuration_mpt.MPTConfig",
    "AutoModelForCausalLM": "modeling_mpt.MPTForCausalLM"
  },
  "d_model": 4096,
  "emb_pdrop": 0,
  "embedding_fraction": 1.0,
  "expansion_ratio": 4,
  "init_config": {
    "emb_init_std": null,
    "emb_init_uniform_lim": null,
    "fan_mode": "fan_in",
    "init_div_is_residual": true,
    "init_gain": 0,
    "init_nonlinearity": "relu",
    "init_std": 0.02,
    "name": "kaiming_normal_",
    "verbose": 0
  },
  "init_device": "cpu",
  "learned_pos_emb": true,
  "logit_scale": null,
  "max_seq_len": 2048,
  "model_type": "mpt",
  "n_heads": 32,
  "n_layers": 32,
  "no_bias": true,
  "norm_type": "low_precision_layernorm",
  "resid_pdrop": 0,
  "tokenizer_name": "EleutherAI/gpt-neox-20b",
  "torch_dtype": "bfloat16",
  "transformers_version": "4.28.1",
  "use_cache": false,
  "verbose": 0,
  "vocab_size": 50432
}
)";

}  // namespace vkf::test
