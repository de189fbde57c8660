// llama.cpp BLOOM GGUF files as vkformer checkpoints (host/spec/gguf_checkpoint.hpp,
// host/quant/gguf_tensor_file.hpp): the metadata mapped to a ModelConfig, tensor names and the
// fused QKV's row order read back as BLOOM's in place, and everything vkformer cannot run
// refused by name.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "host/io/gguf.hpp"
#include "host/io/safetensors.hpp"
#include "host/quant/gguf_tensor_file.hpp"
#include "host/quant/quantized_checkpoint.hpp"
#include "host/spec/gguf_checkpoint.hpp"
#include "host/spec/model_config.hpp"
#include "tests/io/gguf_test_writer.hpp"
#include "tests/support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using vkf::test::GgufBytes;

constexpr std::uint32_t kHidden = 4, kHeads = 2, kVocab = 3;

struct Options {
    std::string architecture = "bloom";
    std::uint32_t ffn = 4 * kHidden;
    std::uint32_t kv_heads = kHeads;
    std::string extra_tensor;
    std::string dropped_tensor;
    std::uint32_t qkv_type = 0;  // F32
};

// A one-layer BLOOM of width 4 with 2 heads, every tensor F32 and filled with its element
// index (the QKV weight's row r holds 100 r + column), written as llama.cpp writes it.
std::string bloom_gguf(const Options& o = {}) {
    struct Tensor {
        std::string name;
        std::vector<std::uint64_t> dims;
    };
    std::vector<Tensor> tensors = {
        {"token_embd.weight", {kHidden, kVocab}}, {"token_embd_norm.weight", {kHidden}},
        {"token_embd_norm.bias", {kHidden}},      {"blk.0.attn_norm.weight", {kHidden}},
        {"blk.0.attn_norm.bias", {kHidden}},      {"blk.0.attn_qkv.weight", {kHidden, 3 * kHidden}},
        {"blk.0.attn_qkv.bias", {3 * kHidden}},   {"blk.0.attn_output.weight", {kHidden, kHidden}},
        {"blk.0.attn_output.bias", {kHidden}},    {"blk.0.ffn_norm.weight", {kHidden}},
        {"blk.0.ffn_norm.bias", {kHidden}},       {"blk.0.ffn_up.weight", {kHidden, 4 * kHidden}},
        {"blk.0.ffn_up.bias", {4 * kHidden}},     {"blk.0.ffn_down.weight", {4 * kHidden, kHidden}},
        {"blk.0.ffn_down.bias", {kHidden}},       {"output_norm.weight", {kHidden}},
        {"output_norm.bias", {kHidden}},
    };
    std::erase_if(tensors, [&](const Tensor& t) { return t.name == o.dropped_tensor; });
    if (!o.extra_tensor.empty()) {
        tensors.push_back({o.extra_tensor, {kHidden}});
    }
    GgufBytes g;
    g.header(tensors.size(), 9).kv_str("general.architecture", o.architecture);
    g.kv_u32(o.architecture + ".context_length", 64).kv_u32(o.architecture + ".embedding_length", kHidden);
    g.kv_u32(o.architecture + ".feed_forward_length", o.ffn).kv_u32(o.architecture + ".block_count", 1);
    g.kv_u32(o.architecture + ".attention.head_count", kHeads);
    g.kv_u32(o.architecture + ".attention.head_count_kv", o.kv_heads);
    g.kv_f32(o.architecture + ".attention.layer_norm_epsilon", 1e-5f);
    g.kv_u32("tokenizer.ggml.eos_token_id", 2);
    std::uint64_t offset = 0;
    std::vector<std::uint64_t> sizes;
    for (const Tensor& t : tensors) {
        std::uint64_t count = 1;
        for (const std::uint64_t d : t.dims) {
            count *= d;
        }
        const bool qkv = t.name == "blk.0.attn_qkv.weight";
        const std::uint32_t type = qkv ? o.qkv_type : 0;
        g.tensor(t.name, t.dims, type, offset);
        const std::uint64_t bytes = count * 4;  // F32, or I32 for the refused type
        sizes.push_back(bytes);
        offset += (bytes + 31) / 32 * 32;
    }
    g.pad(32);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const std::uint64_t columns = tensors[i].dims[0];
        for (std::uint64_t e = 0; e < sizes[i] / 4; ++e) {
            g.f32(static_cast<float>(100 * (e / columns) + e % columns));
        }
        g.pad(32);
    }
    return g.bytes();
}

class GgufCheckpointTest : public ::testing::Test {
protected:
    fs::path write(const std::string& bytes) {
        const fs::path path = dir_.path() / "model.gguf";
        std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        return path;
    }
    // What loading the file as a model says: its configuration, its tensors read in place,
    // then the checks every checkpoint gets.
    std::string load_error(const Options& o) {
        const fs::path path = write(bloom_gguf(o));
        return vkf::test::error_message([&] {
            const vkf::ModelConfig config = vkf::read_model_config(path);
            vkf::check_model_checkpoint(vkf::open_model_checkpoint(path), config);
        });
    }
    vkf::test::TempDir dir_{"vkf_test_gguf_checkpoint"};
};

TEST_F(GgufCheckpointTest, MapsTheMetadata) {
    const vkf::ModelConfig config = vkf::model_config_from_gguf(vkf::open_gguf(write(bloom_gguf())));
    EXPECT_EQ(config.family, vkf::ModelFamily::Bloom);
    EXPECT_EQ(config.hidden, kHidden);
    EXPECT_EQ(config.n_head, kHeads);
    EXPECT_EQ(config.head_dim, kHidden / kHeads);
    EXPECT_EQ(config.ffn_hidden, 4 * kHidden);
    EXPECT_EQ(config.n_layer, 1u);
    EXPECT_EQ(config.vocab_size, kVocab);
    EXPECT_EQ(config.max_seq_len, 64u);
    EXPECT_NEAR(config.layer_norm_epsilon, 1e-5, 1e-12);
    EXPECT_TRUE(config.tie_word_embeddings);
    EXPECT_EQ(config.eos_token_ids, std::vector<std::uint32_t>{2});
}

TEST_F(GgufCheckpointTest, ReadsBloomNamesAndQkvOrderInPlace) {
    const fs::path path = write(bloom_gguf());
    const vkf::ModelConfig config = vkf::read_model_config(path);
    EXPECT_EQ(config, vkf::model_config_from_gguf(vkf::open_gguf(path)));
    const vkf::ShardedCheckpoint checkpoint = vkf::open_model_checkpoint(path);
    EXPECT_EQ(vkf::check_model_checkpoint(checkpoint, config), vkf::QuantFormat::None);
    EXPECT_EQ(checkpoint.tensor_names().size(), 17u);
    EXPECT_EQ(checkpoint.read_as_f32("word_embeddings.weight")[5], 101.0f);
    EXPECT_EQ(checkpoint.read_as_f32("h.0.mlp.dense_4h_to_h.weight")[17], 101.0f);
    // llama.cpp's row (part, head, d) = part * 4 + head * 2 + d is BLOOM's row head * 6 + part * 2 + d.
    const std::vector<float> qkv = checkpoint.read_as_f32("h.0.self_attention.query_key_value.weight");
    const std::vector<float> bias = checkpoint.read_as_f32("h.0.self_attention.query_key_value.bias");
    for (std::uint32_t part = 0; part < 3; ++part) {
        for (std::uint32_t head = 0; head < kHeads; ++head) {
            for (std::uint32_t d = 0; d < 2; ++d) {
                const std::uint32_t stored = part * 4 + head * 2 + d, bloom = head * 6 + part * 2 + d;
                EXPECT_EQ(qkv[bloom * kHidden + 1], static_cast<float>(100 * stored + 1)) << bloom;
                EXPECT_EQ(bias[bloom], static_cast<float>(stored)) << bloom;
            }
        }
    }
}

TEST_F(GgufCheckpointTest, RefusesWhatVkformerCannotRun) {
    Options llama;
    llama.architecture = "llama";
    EXPECT_NE(load_error(llama).find("GGUF architecture 'llama' is not an ALiBi family vkformer runs"),
              std::string::npos);
    Options ffn;
    ffn.ffn = 20;
    EXPECT_NE(load_error(ffn).find("bloom.feed_forward_length 20 is not 4 x bloom.embedding_length 4"),
              std::string::npos);
    Options gqa;
    gqa.kv_heads = 1;
    EXPECT_NE(load_error(gqa).find("head_count_kv 1 differs from head_count 2"), std::string::npos);
    Options extra;
    extra.extra_tensor = "blk.0.attn_q_norm.weight";
    EXPECT_NE(load_error(extra).find("tensor 'blk.0.attn_q_norm.weight' is not one of llama.cpp's BLOOM tensors"),
              std::string::npos);
    Options missing;
    missing.dropped_tensor = "blk.0.ffn_up.bias";
    const std::string message = load_error(missing);
    EXPECT_NE(message.find("model.gguf' does not match the bloom config"), std::string::npos) << message;
    EXPECT_NE(message.find("h.0.mlp.dense_h_to_4h.bias"), std::string::npos) << message;
    Options padded;
    padded.extra_tensor = "blk.00.attn_norm.bias";  // would be a second h.0.input_layernorm.bias
    EXPECT_NE(load_error(padded).find("tensor 'blk.00.attn_norm.bias' is not one of llama.cpp's BLOOM tensors"),
              std::string::npos);
    Options i32;
    i32.qkv_type = 26;  // I32: read by open_gguf, not a weight type
    EXPECT_NE(load_error(i32).find("tensor 'blk.0.attn_qkv.weight' is of type I32, which vkformer does not read"),
              std::string::npos);

    GgufBytes no_keys;
    no_keys.header(0, 1).kv_str("general.architecture", "bloom");
    const vkf::GgufFile file = vkf::open_gguf(write(no_keys.bytes()));
    EXPECT_NE(vkf::test::error_message([&] {
                  vkf::model_config_from_gguf(file);
              }).find("no metadata key 'bloom.embedding_length'"),
              std::string::npos);
}

// tokenizer.ggml.* written as llama.cpp's converter writes BLOOM's tokenizer (tokens by id, added
// tokens as CONTROL, pre "bloom", merges as "a b") must give back the tokenizer.json it came from.
TEST_F(GgufCheckpointTest, TranslatesTheTokenizerBack) {
    std::ifstream in(std::string(VKF_TEXT_DATA) + "/bloom_style.json");
    std::stringstream text;
    text << in.rdbuf();
    const nlohmann::json original = nlohmann::json::parse(text.str());
    std::map<std::uint64_t, std::pair<std::string, std::uint32_t>> by_id;  // id -> (token, GGUF type)
    for (const auto& [token, id] : original["model"]["vocab"].items()) {
        by_id[id.get<std::uint64_t>()] = {token, 1};
    }
    for (const auto& added : original["added_tokens"]) {
        by_id[added["id"].get<std::uint64_t>()] = {added["content"].get<std::string>(), 3};
    }
    ASSERT_EQ(by_id.rbegin()->first + 1, by_id.size());
    GgufBytes g;
    g.header(0, 6).kv_str("general.architecture", "bloom").kv_str("tokenizer.ggml.model", "gpt2");
    g.kv_str("tokenizer.ggml.pre", "bloom");
    g.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(by_id.size());
    for (const auto& [id, entry] : by_id) {
        g.str(entry.first);
    }
    g.str("tokenizer.ggml.token_type").u32(9).u32(5).u64(by_id.size());
    for (const auto& [id, entry] : by_id) {
        g.u32(entry.second);
    }
    const nlohmann::json& merges = original["model"]["merges"];
    g.str("tokenizer.ggml.merges").u32(9).u32(8).u64(merges.size());
    for (const auto& merge : merges) {
        g.str(merge.get<std::string>());
    }
    const auto translated = vkf::tokenizer_json_from_gguf(vkf::open_gguf(write(g.bytes())));
    ASSERT_TRUE(translated.has_value());
    const nlohmann::json ours = nlohmann::json::parse(*translated);
    EXPECT_EQ(ours["pre_tokenizer"], original["pre_tokenizer"]);
    EXPECT_EQ(ours["decoder"], original["decoder"]);
    EXPECT_EQ(ours["model"]["merges"], original["model"]["merges"]);
    EXPECT_EQ(ours["added_tokens"], original["added_tokens"]);
    nlohmann::json vocab = original["model"]["vocab"];
    for (const auto& added : original["added_tokens"]) {
        vocab[added["content"].get<std::string>()] = added["id"];
    }
    EXPECT_EQ(ours["model"]["vocab"], vocab);

    GgufBytes other;
    other.header(0, 3).kv_str("general.architecture", "bloom").kv_str("tokenizer.ggml.model", "gpt2");
    other.kv_str("tokenizer.ggml.pre", "llama-bpe");
    EXPECT_FALSE(vkf::tokenizer_json_from_gguf(vkf::open_gguf(write(other.bytes()))).has_value());
}

}  // namespace
