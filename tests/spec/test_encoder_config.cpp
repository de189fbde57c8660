// JinaBERT config.json parsing (modelled on jinaai/jina-embeddings-v2-base-en), refusal of
// settings the encoder cannot run (by key), the expected tensor list, the writer's round trip,
// and check_encoder_checkpoint against written checkpoints with and without "bert.", with
// tensors missing, misshapen or of a dtype vkformer does not read.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "host/io/safetensors.hpp"
#include "host/io/safetensors_writer.hpp"
#include "host/spec/encoder_checkpoint.hpp"
#include "host/spec/encoder_config.hpp"
#include "tests/support/test_support.hpp"

namespace {

using vkf::EncoderConfig;
using vkf::test::error_message;

// jinaai/jina-embeddings-v2-base-en's config.json (its auto_map shortened to one entry).
constexpr std::string_view kJinaBase = R"({
  "_name_or_path": "jinaai/jina-bert-implementation",
  "architectures": ["JinaBertForMaskedLM"],
  "attention_probs_dropout_prob": 0.0,
  "auto_map": {"AutoModel": "jinaai/jina-bert-implementation--modeling_bert.JinaBertModel"},
  "classifier_dropout": null,
  "emb_pooler": "mean",
  "feed_forward_type": "geglu",
  "gradient_checkpointing": false,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 768,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "layer_norm_eps": 1e-12,
  "max_position_embeddings": 8192,
  "model_max_length": 8192,
  "model_type": "bert",
  "num_attention_heads": 12,
  "num_hidden_layers": 12,
  "pad_token_id": 0,
  "position_embedding_type": "alibi",
  "torch_dtype": "float32",
  "transformers_version": "4.26.0",
  "type_vocab_size": 2,
  "use_cache": true,
  "vocab_size": 30528
})";

// kJinaBase with `key` set to `value` (JSON text), or removed when value is empty.
std::string with(const std::string& key, const std::string& value) {
    nlohmann::ordered_json json = nlohmann::ordered_json::parse(kJinaBase);
    if (value.empty()) {
        json.erase(key);
    } else {
        json[key] = nlohmann::ordered_json::parse(value);
    }
    return json.dump(2);
}

std::string refusal(const std::string& text) {
    return error_message([&] { vkf::parse_encoder_config(text); });
}

TEST(EncoderConfig, ParsesJinaEmbeddingsV2Base) {
    const EncoderConfig c = vkf::parse_encoder_config(kJinaBase);
    EXPECT_EQ(c.vocab_size, 30528u);
    EXPECT_EQ(c.hidden, 768u);
    EXPECT_EQ(c.n_layer, 12u);
    EXPECT_EQ(c.n_head, 12u);
    EXPECT_EQ(c.head_dim, 64u);
    EXPECT_EQ(c.intermediate, 3072u);
    EXPECT_EQ(c.type_vocab_size, 2u);
    EXPECT_EQ(c.max_position_embeddings, 8192u);
    EXPECT_DOUBLE_EQ(c.layer_norm_eps, 1e-12);
    EXPECT_TRUE(vkf::is_encoder_config(kJinaBase));
    EXPECT_FALSE(vkf::is_encoder_config(R"({"model_type": "bloom"})"));
}

TEST(EncoderConfig, RefusesWhatItCannotRunByKey) {
    struct Refused {
        std::string text;
        std::string expected;  // in the message
    };
    const std::vector<Refused> cases = {
        {with("position_embedding_type", "\"absolute\""), "position_embedding_type: 'absolute' is not supported"},
        {with("position_embedding_type", ""), "missing key 'position_embedding_type' means 'absolute'"},
        {with("hidden_act", "\"relu\""), "hidden_act: 'relu' is not supported"},
        {with("feed_forward_type", "\"reglu\""), "feed_forward_type: 'reglu' is not supported"},
        {with("feed_forward_type", ""), "missing key 'feed_forward_type' means 'original'"},
        {with("emb_pooler", "\"cls\""), "emb_pooler: 'cls' is not supported"},
        {with("model_type", "\"roberta\""), "model_type: 'roberta' is not an encoder"},
        {with("is_decoder", "true"), "is_decoder: a decoder"},
        {with("add_cross_attention", "true"), "add_cross_attention: cross-attention"},
        {with("alibi_scaling", "2"), "alibi_scaling: scaled ALiBi"},
        {with("num_attention_heads", "7"), "hidden_size 768 is not a multiple of num_attention_heads 7"},
        {with("hidden_size", "0"), "hidden_size: must be positive"},
        {with("num_hidden_layers", "100000"), "n_layer 100000 is over vkformer's limit"},
        {with("layer_norm_eps", "-1"), "layer_norm_eps: must be a positive number"},
        {with("vocab_size", ""), "missing key 'vocab_size'"},
        {with("auto_map", R"({"AutoModel": "jinaai/jina-bert-v2-qk-post-norm--modeling_bert.JinaBertModel"})"),
         "qk-post-norm"},
    };
    for (const Refused& r : cases) {
        SCOPED_TRACE(r.text);
        const std::string message = refusal(r.text);
        EXPECT_NE(message.find(r.expected), std::string::npos) << message;
    }
    // What may be absent or null: the pooler, the epsilon, the type vocabulary.
    EXPECT_EQ(vkf::parse_encoder_config(with("emb_pooler", "null")).hidden, 768u);
    EXPECT_EQ(vkf::parse_encoder_config(with("layer_norm_eps", "")).layer_norm_eps, 1e-12);
}

TEST(EncoderConfig, WriterRoundTrips) {
    const EncoderConfig c{.vocab_size = 211,
                          .hidden = 96,
                          .n_layer = 2,
                          .n_head = 3,
                          .head_dim = 32,
                          .intermediate = 128,
                          .type_vocab_size = 2,
                          .max_position_embeddings = 64,
                          .layer_norm_eps = 1e-12};
    for (const vkf::DType dtype : {vkf::DType::F32, vkf::DType::F16, vkf::DType::BF16}) {
        EXPECT_EQ(vkf::parse_encoder_config(vkf::encoder_hf_config_json(c, dtype)), c);
    }
}

TEST(EncoderConfig, ExpectedTensorsAreJinaBertNames) {
    const EncoderConfig c = vkf::parse_encoder_config(kJinaBase);
    const std::vector<vkf::ExpectedTensor> tensors = vkf::expected_encoder_tensors(c);
    // Per layer: query, key, value, output dense (weights and biases), two LayerNorms,
    // gated_layers (no bias), wo.
    ASSERT_EQ(tensors.size(), 4u + 15u * 12u);
    EXPECT_EQ(tensors[0].name, "embeddings.word_embeddings.weight");
    EXPECT_EQ(tensors[0].shape, (std::vector<std::size_t>{30528, 768}));
    EXPECT_EQ(tensors[1].name, "embeddings.token_type_embeddings.weight");
    const auto find = [&](const std::string& name) {
        for (const vkf::ExpectedTensor& t : tensors) {
            if (t.name == name) {
                return t.shape;
            }
        }
        return std::vector<std::size_t>{};
    };
    EXPECT_EQ(find("encoder.layer.11.mlp.gated_layers.weight"), (std::vector<std::size_t>{6144, 768}));
    EXPECT_TRUE(find("encoder.layer.11.mlp.gated_layers.bias").empty()) << "gated_layers has no bias";
    EXPECT_EQ(find("encoder.layer.0.mlp.wo.weight"), (std::vector<std::size_t>{768, 3072}));
    EXPECT_EQ(find("encoder.layer.0.mlp.wo.bias"), (std::vector<std::size_t>{768}));
    EXPECT_EQ(find("encoder.layer.3.attention.output.LayerNorm.bias"), (std::vector<std::size_t>{768}));
    EXPECT_EQ(find("encoder.layer.3.mlp.layernorm.weight"), (std::vector<std::size_t>{768}));
    EXPECT_EQ(find("encoder.layer.5.attention.self.value.bias"), (std::vector<std::size_t>{768}));
}

class EncoderCheckpoint : public ::testing::Test {
protected:
    const EncoderConfig config_{.vocab_size = 50,
                                .hidden = 64,
                                .n_layer = 1,
                                .n_head = 2,
                                .head_dim = 32,
                                .intermediate = 48,
                                .type_vocab_size = 2,
                                .max_position_embeddings = 64,
                                .layer_norm_eps = 1e-12};
    vkf::test::TempDir dir_{"vkf_test_encoder_config"};

    std::string check() {
        return error_message([&] { vkf::check_encoder_checkpoint(vkf::open_checkpoint(dir_.path()), config_); });
    }
    // The written checkpoint with one tensor changed (or dropped: an empty shape).
    void write_with(const std::string& name, std::vector<std::size_t> shape) {
        std::vector<vkf::TensorSource> tensors;
        for (vkf::ExpectedTensor& t : vkf::expected_encoder_tensors(config_)) {
            if (t.name == name) {
                if (shape.empty()) {
                    continue;
                }
                t.shape = shape;
            }
            tensors.push_back({t.name, t.shape,
                               [](std::uint64_t, std::span<float> out) { std::fill(out.begin(), out.end(), 0.5f); }});
        }
        vkf::write_safetensors_checkpoint(dir_.path(), tensors, vkf::DType::F32);
    }
};

TEST_F(EncoderCheckpoint, AcceptsBothPrefixes) {
    for (const bool prefix : {false, true}) {
        vkf::write_random_encoder_checkpoint(dir_.path(), config_, {.dtype = vkf::DType::F16, .bert_prefix = prefix});
        const vkf::ShardedCheckpoint checkpoint = vkf::open_checkpoint(dir_.path());
        EXPECT_NO_THROW(vkf::check_encoder_checkpoint(checkpoint, config_));
        EXPECT_EQ(vkf::encoder_tensor_name(checkpoint, "encoder.layer.0.mlp.wo.bias"),
                  prefix ? "bert.encoder.layer.0.mlp.wo.bias" : "encoder.layer.0.mlp.wo.bias");
        EXPECT_EQ(vkf::read_encoder_config(dir_.path()), config_);
    }
}

TEST_F(EncoderCheckpoint, NamesMissingAndMisshapenTensors) {
    write_with("encoder.layer.0.mlp.gated_layers.weight", {});
    std::string message = check();
    EXPECT_NE(message.find("tensor 'encoder.layer.0.mlp.gated_layers.weight' (expected shape [96, 64]) is missing"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("bert.encoder.layer.0.mlp.gated_layers.weight"), std::string::npos) << message;

    write_with("encoder.layer.0.mlp.wo.weight", {64, 96});
    message = check();
    EXPECT_NE(message.find("'encoder.layer.0.mlp.wo.weight': shape [64, 96] but the config expects [64, 48]"),
              std::string::npos)
        << message;
}

}  // namespace
