// The config.json and checkpoints that write_random_checkpoint writes read back and pass
// check_checkpoint, and check_checkpoint's reports on hand-made checkpoints with wrong shapes,
// missing tensors and dtypes vkformer does not read.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "host/io/json.hpp"
#include "host/io/safetensors.hpp"
#include "host/spec/model_config.hpp"
#include "host/spec/random_weights.hpp"
#include "tests/spec/hf_configs.hpp"
#include "tests/support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using vkf::ModelConfig;
using vkf::ModelFamily;
using vkf::test::kBloom560m;
using vkf::test::kMpt7b;

class ModelCheckpointTest : public ::testing::Test {
protected:
    static ModelConfig small(ModelFamily family) {
        if (family == ModelFamily::Bloom) {
            return ModelConfig{.family = ModelFamily::Bloom,
                               .vocab_size = 64,
                               .hidden = 32,
                               .n_layer = 2,
                               .n_head = 4,
                               .n_kv_head = 4,
                               .head_dim = 8,
                               .ffn_hidden = 128};
        }
        return ModelConfig{.family = ModelFamily::Mpt,
                           .vocab_size = 48,
                           .hidden = 36,
                           .n_layer = 2,
                           .n_head = 12,
                           .n_kv_head = 12,
                           .head_dim = 3,
                           .ffn_hidden = 100,
                           .alibi_bias_max = 12.0,
                           .no_bias = false,
                           .clip_qkv = 0.5,
                           .max_seq_len = 512};
    }

    static std::string check_error(const vkf::ShardedCheckpoint& checkpoint, const ModelConfig& config) {
        return vkf::test::error_message([&] { vkf::check_checkpoint(checkpoint, config); });
    }

    // A safetensors file holding zero-filled tensors of the given names, dtypes and shapes.
    void write_zeros(const fs::path& file,
                     const std::vector<std::tuple<std::string, std::string, std::vector<std::size_t>>>& tensors) {
        std::string header = "{";
        std::uint64_t offset = 0;
        for (const auto& [name, dtype, shape] : tensors) {
            std::uint64_t bytes = dtype == "F32" || dtype == "I32" ? 4 : dtype == "I64" ? 8 : 2;
            std::string dims;
            for (std::size_t dim : shape) {
                bytes *= dim;
                dims += (dims.empty() ? "" : ",") + std::to_string(dim);
            }
            header += (header.size() > 1 ? "," : "") + std::string("\"") + name + "\":{\"dtype\":\"" + dtype +
                      "\",\"shape\":[" + dims + "],\"data_offsets\":[" + std::to_string(offset) + "," +
                      std::to_string(offset + bytes) + "]}";
            offset += bytes;
        }
        header += "}";
        std::ofstream out(file, std::ios::binary);
        for (int i = 0; i < 8; ++i) {
            out.put(static_cast<char>((header.size() >> (8 * i)) & 0xff));
        }
        out << header << std::string(offset, '\0');
    }

    vkf::test::TempDir dir_{"vkf_test_model_checkpoint"};
};

TEST_F(ModelCheckpointTest, WrittenConfigsParseBack) {
    for (ModelFamily family : {ModelFamily::Bloom, ModelFamily::Mpt}) {
        for (bool tied : {true, false}) {
            ModelConfig config = small(family);
            config.tie_word_embeddings = tied;
            const std::string text = vkf::hf_config_json(config, vkf::DType::BF16);
            EXPECT_EQ(vkf::parse_model_config(text), config) << text;
            const vkf::JsonValue json = vkf::parse_json(text, "written");
            EXPECT_EQ(json.at("model_type").as_string(), vkf::family_name(family));
            EXPECT_EQ(json.at("architectures").at(std::size_t{0}).as_string(),
                      family == ModelFamily::Bloom ? "BloomForCausalLM" : "MPTForCausalLM");
            EXPECT_EQ(json.at("torch_dtype").as_string(), "bfloat16");
        }
    }
    // bloom-560m's own shape writes the keys its real config.json has.
    const ModelConfig bloom = vkf::parse_model_config(kBloom560m);
    const vkf::JsonValue written = vkf::parse_json(vkf::hf_config_json(bloom, vkf::DType::F16), "w");
    const vkf::JsonValue real = vkf::parse_json(kBloom560m, "real");
    for (const vkf::JsonMember& member : written.as_object()) {
        EXPECT_NE(real.find(member.key), nullptr) << member.key;
    }
    EXPECT_EQ(vkf::parse_model_config(vkf::hf_config_json(bloom, vkf::DType::F16)), bloom);
    const ModelConfig mpt = vkf::parse_model_config(kMpt7b);
    EXPECT_EQ(vkf::parse_model_config(vkf::hf_config_json(mpt, vkf::DType::BF16)), mpt);
}

TEST_F(ModelCheckpointTest, WrittenCheckpointsPassTheCheck) {
    for (ModelFamily family : {ModelFamily::Bloom, ModelFamily::Mpt}) {
        const ModelConfig config = small(family);
        const fs::path dir = dir_.path() / std::string(vkf::family_name(family));
        vkf::write_random_checkpoint(dir, config, 9, vkf::DType::F16, 2);
        EXPECT_EQ(vkf::read_model_config(dir), config);
        EXPECT_EQ(vkf::read_model_config(dir / "config.json"), config);
        EXPECT_NO_THROW(vkf::check_checkpoint(vkf::open_checkpoint(dir), config));
    }
}

TEST_F(ModelCheckpointTest, CatchesWrongShapesMissingTensorsAndDtypes) {
    const ModelConfig config = small(ModelFamily::Bloom);
    vkf::write_random_checkpoint(dir_.path() / "bloom", config, 9, vkf::DType::F32);
    const vkf::ShardedCheckpoint checkpoint = vkf::open_checkpoint(dir_.path() / "bloom");
    const std::string file = (dir_.path() / "bloom" / "model.safetensors").string();

    ModelConfig wider_vocab = config;
    wider_vocab.vocab_size = 65;
    std::string message = check_error(checkpoint, wider_vocab);
    EXPECT_NE(message.find("(1 problem)"), std::string::npos) << message;
    EXPECT_NE(message.find("safetensors file '" + file +
                           "': tensor 'transformer.word_embeddings.weight': shape [64, 32] but the config "
                           "expects [65, 32]"),
              std::string::npos)
        << message;

    ModelConfig deeper = config;
    deeper.n_layer = 3;
    message = check_error(checkpoint, deeper);
    EXPECT_NE(message.find("(12 problems)"), std::string::npos) << message;
    EXPECT_NE(message.find("tensor 'h.2.input_layernorm.weight' (expected shape [32]) is missing"), std::string::npos)
        << message;
    EXPECT_NE(message.find((dir_.path() / "bloom").string()), std::string::npos) << message;

    // Many problems are listed up to a limit.
    ModelConfig wider = config;
    wider.hidden = 64;
    wider.head_dim = 16;
    wider.ffn_hidden = 256;
    message = check_error(checkpoint, wider);
    EXPECT_NE(message.find("... and "), std::string::npos) << message;

    // A checkpoint without the prefix and with an integer tensor where a weight belongs.
    std::vector<std::tuple<std::string, std::string, std::vector<std::size_t>>> tensors;
    for (const vkf::ExpectedTensor& tensor : vkf::expected_tensors(config)) {
        const bool broken = tensor.name == "h.1.self_attention.dense.bias";
        tensors.emplace_back(tensor.name, broken ? "I32" : "BF16", tensor.shape);
    }
    fs::create_directories(dir_.path() / "bare");
    write_zeros(dir_.path() / "bare" / "model.safetensors", tensors);
    message = check_error(vkf::open_checkpoint(dir_.path() / "bare"), config);
    EXPECT_NE(message.find("(1 problem)"), std::string::npos) << message;
    EXPECT_NE(message.find("tensor 'h.1.self_attention.dense.bias': dtype I32 is not one vkformer reads"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find((dir_.path() / "bare" / "model.safetensors").string()), std::string::npos) << message;

    tensors.erase(tensors.begin() + 4);  // h.0.input_layernorm.bias
    std::get<1>(tensors[8]) = "F32";
    write_zeros(dir_.path() / "bare" / "model.safetensors", tensors);
    message = check_error(vkf::open_checkpoint(dir_.path() / "bare"), config);
    EXPECT_NE(message.find("tensor 'h.0.input_layernorm.bias' (expected shape [32]) is missing"), std::string::npos)
        << message;
}

}  // namespace
