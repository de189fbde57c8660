// config.json parsing for BLOOM and MPT (files modelled on bigscience/bloom-560m and
// mosaicml/mpt-7b), refusal of configurations vkformer cannot run, and the expected tensor
// lists. Written configs and checkpoints: test_model_checkpoint.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "host/io/json.hpp"
#include "host/io/safetensors.hpp"
#include "host/spec/model_config.hpp"
#include "host/spec/random_weights.hpp"
#include "tests/spec/hf_configs.hpp"
#include "tests/support/test_support.hpp"

namespace {

using vkf::ModelConfig;
using vkf::ModelFamily;
using vkf::test::kBloom560m;
using vkf::test::kMpt7b;

// `text` with the first occurrence of `from` replaced by `to` (which must exist).
std::string replaced(std::string_view text, std::string_view from, std::string_view to) {
    std::string result(text);
    const std::size_t pos = result.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    if (pos != std::string::npos) {
        result.replace(pos, from.size(), to);
    }
    return result;
}

std::string config_error(const std::string& text) {
    return vkf::test::error_message([&] { vkf::parse_model_config(text); });
}

std::uint64_t parameter_count(const ModelConfig& config) {
    std::uint64_t count = 0;
    for (const vkf::ExpectedTensor& tensor : vkf::expected_tensors(config)) {
        std::uint64_t elements = 1;
        for (std::size_t dim : tensor.shape) {
            elements *= dim;
        }
        count += elements;
    }
    return count;
}

TEST(ModelConfig, ParsesBloom560m) {
    const ModelConfig config = vkf::parse_model_config(kBloom560m);
    EXPECT_EQ(config.family, ModelFamily::Bloom);
    EXPECT_EQ(config.vocab_size, 250880u);
    EXPECT_EQ(config.hidden, 1024u);
    EXPECT_EQ(config.n_layer, 24u);
    EXPECT_EQ(config.n_head, 16u);
    EXPECT_EQ(config.n_kv_head, 16u);
    EXPECT_EQ(config.head_dim, 64u);
    EXPECT_EQ(config.ffn_hidden, 4096u);
    EXPECT_DOUBLE_EQ(config.layer_norm_epsilon, 1e-5);
    EXPECT_DOUBLE_EQ(config.alibi_bias_max, 8.0);
    EXPECT_FALSE(config.no_bias);
    EXPECT_FALSE(config.clip_qkv.has_value());
    EXPECT_EQ(config.max_seq_len, 2048u);
    EXPECT_TRUE(config.tie_word_embeddings);
    EXPECT_EQ(config.bos_token_id, 1u);
    EXPECT_EQ(config.eos_token_ids, std::vector<std::uint32_t>{2});

    const std::vector<vkf::ExpectedTensor> tensors = vkf::expected_tensors(config);
    EXPECT_EQ(tensors.size(), 12u * 24u + 5u);
    EXPECT_EQ(tensors.front().name, "word_embeddings.weight");
    EXPECT_EQ(tensors.front().shape, (std::vector<std::size_t>{250880, 1024}));
    EXPECT_EQ(tensors[3].name, "h.0.input_layernorm.weight");
    EXPECT_EQ(tensors[5].name, "h.0.self_attention.query_key_value.weight");
    EXPECT_EQ(tensors[5].shape, (std::vector<std::size_t>{3072, 1024}));
    EXPECT_EQ(tensors[11].name, "h.0.mlp.dense_h_to_4h.weight");
    EXPECT_EQ(tensors[11].shape, (std::vector<std::size_t>{4096, 1024}));
    EXPECT_EQ(tensors[13].name, "h.0.mlp.dense_4h_to_h.weight");
    EXPECT_EQ(tensors[13].shape, (std::vector<std::size_t>{1024, 4096}));
    EXPECT_EQ(tensors.back().name, "ln_f.bias");
    // Hugging Face reports 559,214,592 parameters for bloom-560m.
    EXPECT_EQ(parameter_count(config), 559'214'592u);
}

TEST(ModelConfig, ParsesOlderBloomSpellings) {
    std::string text = replaced(kBloom560m, R"("hidden_size": 1024)", R"("n_embed": 1024, "seq_length": 4096)");
    text = replaced(text, R"("n_layer": 24)", R"("num_hidden_layers": 24)");
    const ModelConfig config = vkf::parse_model_config(text);
    EXPECT_EQ(config.hidden, 1024u);
    EXPECT_EQ(config.n_layer, 24u);
    EXPECT_EQ(config.max_seq_len, 4096u);
    EXPECT_EQ(config, vkf::parse_model_config(
                          replaced(kBloom560m, R"("use_cache": true)", R"("use_cache": true, "seq_length": 4096)")));
}

TEST(ModelConfig, ParsesMpt7b) {
    const ModelConfig config = vkf::parse_model_config(kMpt7b);
    EXPECT_EQ(config.family, ModelFamily::Mpt);
    EXPECT_EQ(config.vocab_size, 50432u);
    EXPECT_EQ(config.hidden, 4096u);
    EXPECT_EQ(config.n_layer, 32u);
    EXPECT_EQ(config.n_head, 32u);
    EXPECT_EQ(config.n_kv_head, 32u);
    EXPECT_EQ(config.head_dim, 128u);
    EXPECT_EQ(config.ffn_hidden, 16384u);
    EXPECT_DOUBLE_EQ(config.layer_norm_epsilon, 1e-5);
    EXPECT_DOUBLE_EQ(config.alibi_bias_max, 8.0);
    EXPECT_TRUE(config.no_bias);
    EXPECT_FALSE(config.clip_qkv.has_value());
    EXPECT_EQ(config.max_seq_len, 2048u);
    EXPECT_TRUE(config.tie_word_embeddings);

    const std::vector<vkf::ExpectedTensor> tensors = vkf::expected_tensors(config);
    EXPECT_EQ(tensors.size(), 6u * 32u + 2u);
    EXPECT_EQ(tensors[0].name, "wte.weight");
    EXPECT_EQ(tensors[1].name, "blocks.0.norm_1.weight");
    EXPECT_EQ(tensors[2].name, "blocks.0.attn.Wqkv.weight");
    EXPECT_EQ(tensors[2].shape, (std::vector<std::size_t>{3 * 4096, 4096}));
    EXPECT_EQ(tensors[5].name, "blocks.0.ffn.up_proj.weight");
    EXPECT_EQ(tensors[5].shape, (std::vector<std::size_t>{16384, 4096}));
    EXPECT_EQ(tensors[6].name, "blocks.0.ffn.down_proj.weight");
    EXPECT_EQ(tensors.back().name, "norm_f.weight");
    // MosaicML reports 6.7B parameters; exactly 6,649,286,656.
    EXPECT_EQ(parameter_count(config), 6'649'286'656u);
}

TEST(ModelConfig, ParsesMptWithBiasesClipAndOddHeads) {
    std::string text = replaced(kMpt7b, R"("clip_qkv": null)", R"("clip_qkv": 6)");
    text = replaced(text, R"("alibi_bias_max": 8)", R"("alibi_bias_max": 16)");
    text = replaced(text, R"("no_bias": true)", R"("no_bias": false)");
    text = replaced(text, R"("d_model": 4096)", R"("d_model": 768)");
    text = replaced(text, R"("n_heads": 32)", R"("n_heads": 12)");
    text = replaced(text, R"("n_layers": 32)", R"("n_layers": 2)");
    text = replaced(text, R"("expansion_ratio": 4)", R"("expansion_ratio": 2.5, "layer_norm_epsilon": 1e-6)");
    const ModelConfig config = vkf::parse_model_config(text);
    EXPECT_EQ(config.head_dim, 64u);
    EXPECT_EQ(config.ffn_hidden, 1920u);
    ASSERT_TRUE(config.clip_qkv.has_value());
    EXPECT_DOUBLE_EQ(*config.clip_qkv, 6.0);
    EXPECT_DOUBLE_EQ(config.alibi_bias_max, 16.0);
    EXPECT_DOUBLE_EQ(config.layer_norm_epsilon, 1e-6);
    EXPECT_FALSE(config.no_bias);
    const std::vector<vkf::ExpectedTensor> tensors = vkf::expected_tensors(config);
    EXPECT_EQ(tensors.size(), 12u * 2u + 3u);
    EXPECT_EQ(tensors[1].name, "blocks.0.norm_1.weight");
    EXPECT_EQ(tensors[2].name, "blocks.0.norm_1.bias");
    EXPECT_EQ(tensors[4].name, "blocks.0.attn.Wqkv.bias");
    EXPECT_EQ(tensors[4].shape, (std::vector<std::size_t>{3 * 768}));
    EXPECT_EQ(tensors.back().name, "norm_f.bias");

    // llm-foundry's ffn_config.ffn_hidden_size overrides the expansion ratio.
    const ModelConfig sized = vkf::parse_model_config(replaced(
        text, R"("init_device")", R"("ffn_config": {"ffn_type": "mptmlp", "ffn_hidden_size": 1000}, "init_device")"));
    EXPECT_EQ(sized.ffn_hidden, 1000u);
}

TEST(ModelConfig, UntiedEmbeddingsAddLmHead) {
    const ModelConfig config =
        vkf::parse_model_config(replaced(kBloom560m, R"("use_cache": true)", R"("tie_word_embeddings": false)"));
    EXPECT_FALSE(config.tie_word_embeddings);
    const std::vector<vkf::ExpectedTensor> tensors = vkf::expected_tensors(config);
    EXPECT_EQ(tensors.size(), 12u * 24u + 6u);
    EXPECT_EQ(tensors.back().name, "lm_head.weight");
    EXPECT_EQ(tensors.back().shape, (std::vector<std::size_t>{250880, 1024}));
    EXPECT_EQ(vkf::checkpoint_tensor_name("lm_head.weight"), "lm_head.weight");
    EXPECT_EQ(vkf::checkpoint_tensor_name("ln_f.weight"), "transformer.ln_f.weight");
}

TEST(ModelConfig, ReadsEndOfSequenceIdsAsAnIntegerOrAList) {
    const ModelConfig list =
        vkf::parse_model_config(replaced(kBloom560m, R"("eos_token_id": 2)", R"("eos_token_id": [2, 7])"));
    EXPECT_EQ(list.eos_token_ids, (std::vector<std::uint32_t>{2, 7}));
    const ModelConfig none = vkf::parse_model_config(
        replaced(replaced(kBloom560m, R"("eos_token_id": 2)", R"("eos_token_id": null)"), R"("bos_token_id": 1,)", ""));
    EXPECT_TRUE(none.eos_token_ids.empty());
    EXPECT_FALSE(none.bos_token_id.has_value());
    // Written back as they were read.
    EXPECT_EQ(vkf::parse_model_config(vkf::hf_config_json(list, vkf::DType::F16)), list);
    EXPECT_EQ(vkf::parse_model_config(vkf::hf_config_json(none, vkf::DType::F16)), none);
}

TEST(ModelConfig, RefusesWhatItCannotRun) {
    const std::vector<std::tuple<std::string, std::string>> cases = {
        {replaced(kBloom560m, R"("eos_token_id": 2)", R"("eos_token_id": 250880)"),
         "config.json: eos_token_id: token id 250880 is not below vocab_size 250880"},
        {replaced(kBloom560m, R"("eos_token_id": 2)", R"("eos_token_id": [2, "x"])"),
         "config.json: eos_token_id[1]: expected an integer, got string"},
        {replaced(kBloom560m, R"("n_head": 16)", R"("n_head": "16")"),
         "config.json: n_head: expected an integer, got string"},
        {replaced(kBloom560m, R"("n_head": 16)", R"("n_head": 15)"),
         "config.json: hidden_size 1024 is not a multiple of n_head 15"},
        {replaced(kBloom560m, R"("n_head": 16,)", ""), "config.json: missing key 'n_head' or 'num_attention_heads'"},
        {replaced(kBloom560m, R"("n_layer": 24)", R"("n_layer": 0)"), "config.json: n_layer: must be positive"},
        {replaced(kBloom560m, R"("vocab_size": 250880)", R"("vocab_size": -3)"),
         "config.json: vocab_size: expected a non-negative integer, got number -3"},
        {replaced(kBloom560m, R"("vocab_size": 250880)", R"("vocab_size": 5000000000)"),
         "config.json: vocab_size: expected an integer in [0, 4294967295]"},
        {replaced(kBloom560m, R"("model_type": "bloom")", R"("model_type": "llama")"),
         "config.json: model_type: 'llama' is not supported (vkformer runs bloom, mpt, falcon, baichuan, jais and "
         "gpt_refact)"},
        {replaced(kBloom560m, R"("model_type": "bloom",)", ""), "config.json: missing key 'model_type'"},
        {replaced(kBloom560m, R"("layer_norm_epsilon": 1e-05)", R"("layer_norm_epsilon": 0)"),
         "config.json: layer_norm_epsilon: must be a positive number"},
        {replaced(kBloom560m, R"("hidden_size": 1024)", R"("hidden_size": 1024, "n_embed": 2048)"),
         "n_embed 2048 and hidden_size 1024 disagree"},
        {replaced(kMpt7b, R"("n_heads": 32)", R"("n_heads": 12)"),
         "config.json: d_model 4096 is not a multiple of n_heads 12"},
        {replaced(kMpt7b, R"("qk_ln": false)", R"("qk_ln": false, "qk_gn": true)"),
         "config.json: attn_config.qk_gn: group norms on queries and keys are not supported"},
        {replaced(kMpt7b, R"("softmax_scale": null)", R"("softmax_scale": -0.1)"),
         "config.json: attn_config.softmax_scale: must be a positive number"},
        {replaced(kMpt7b, R"("prefix_lm": false)", R"("prefix_lm": true)"), "attn_config.prefix_lm: prefix-LM"},
        {replaced(kMpt7b, R"("attn_type": "multihead_attention")", R"("attn_type": "cross_attention")"),
         "attn_config.attn_type: 'cross_attention' is not supported"},
        {replaced(kMpt7b, R"("attn_type": "multihead_attention")",
                  R"("attn_type": "grouped_query_attention", "kv_n_heads": 5)"),
         "attn_config.kv_n_heads: n_heads 32 is not a multiple of kv_n_heads 5"},
        {replaced(kMpt7b, R"("prefix_lm": false)", R"("prefix_lm": false, "rope": true)"),
         "attn_config.rope: rotary position embeddings"},
        {replaced(kMpt7b, R"("clip_qkv": null)", R"("clip_qkv": -1)"),
         "attn_config.clip_qkv: must be a positive number"},
        {replaced(kMpt7b, R"("logit_scale": null)", R"("logit_scale": "inv_sqrt_width")"),
         "config.json: logit_scale: 'inv_sqrt_width' is not a logit scale"},
        {replaced(kMpt7b, R"("norm_type": "low_precision_layernorm")", R"("norm_type": "rmsnorm")"),
         "config.json: norm_type: 'rmsnorm' is not supported"},
        {replaced(kMpt7b, R"("expansion_ratio": 4)", R"("expansion_ratio": "4")"),
         "config.json: expansion_ratio: expected a number, got string"},
        {replaced(kMpt7b, R"("no_bias": true)", R"("no_bias": 1)"), "config.json: no_bias: expected a boolean"},
        {replaced(kMpt7b, R"("init_device")", R"("ffn_config": {"ffn_type": "te_ln_mlp"}, "init_device")"),
         "config.json: ffn_config.ffn_type: 'te_ln_mlp' is not supported"},
        {"[1, 2]", "config.json: expected an object, got array"},
        {"{\"model_type\": \"bloom\",}", "config.json: line 1, column 24"},
    };
    for (const auto& [text, expected] : cases) {
        const std::string message = config_error(text);
        EXPECT_NE(message.find(expected), std::string::npos) << "expected: " << expected << "\nmessage: " << message;
    }
}

TEST(ModelConfig, ValidateRefusesInconsistentConfigs) {
    ModelConfig config = vkf::parse_model_config(kBloom560m);
    EXPECT_NO_THROW(vkf::validate(config));
    ModelConfig bad = config;
    bad.ffn_hidden = 3000;
    EXPECT_THROW(vkf::validate(bad), vkf::Error);
    bad = config;
    bad.head_dim = 32;
    EXPECT_THROW(vkf::validate(bad), vkf::Error);
    bad = config;
    bad.n_kv_head = 8;
    EXPECT_THROW(vkf::validate(bad), vkf::Error);
    bad = config;
    bad.clip_qkv = 4.0;
    EXPECT_THROW(vkf::validate(bad), vkf::Error);
    EXPECT_THROW(vkf::expected_tensors(bad), vkf::Error);
}

}  // namespace
