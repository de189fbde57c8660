// llama.cpp's mpt, baichuan, jais and jina-bert-v2 GGUF files as vkformer checkpoints
// (host/spec/gguf_config.cpp, gguf_checkpoint.cpp, gguf_encoder.cpp, gguf_tokenizer.cpp and
// host/quant/gguf_tensor_file.hpp): what the keys and tensors say, the rows the converter moved
// read back in the family's order, the refusals, and the bert WordPiece and add_*_token flags.
// End to end against llama.cpp's gguf-py: tests/apps/gguf_families_test.py.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/io/gguf.hpp"
#include "host/quant/gguf_tensor_file.hpp"
#include "host/spec/gguf_checkpoint.hpp"
#include "host/text/tokenizer.hpp"
#include "tests/io/gguf_test_writer.hpp"
#include "tests/support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using vkf::test::GgufBytes;

struct Tensor {
    std::string name;
    std::vector<std::uint64_t> dims;  // innermost first, as in the file
    float offset = 0;                 // added to every value: tells tensors of one shape apart
};

// A GGUF of F32 tensors whose element (row r, column c) is offset + 100 r + c, and the keys
// `keys` writes (u32 and f32 values; `n_kv` of them besides general.architecture).
std::string gguf(const std::string& arch, const std::vector<Tensor>& tensors, std::size_t n_kv,
                 const std::function<void(GgufBytes&)>& keys) {
    GgufBytes g;
    g.header(tensors.size(), n_kv + 1).kv_str("general.architecture", arch);
    keys(g);
    std::uint64_t offset = 0;
    std::vector<std::uint64_t> counts;
    for (const Tensor& t : tensors) {
        std::uint64_t count = 1;
        for (const std::uint64_t d : t.dims) {
            count *= d;
        }
        g.tensor(t.name, t.dims, 0, offset);
        counts.push_back(count);
        offset += (count * 4 + 31) / 32 * 32;
    }
    g.pad(32);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        for (std::uint64_t e = 0; e < counts[i]; ++e) {
            const std::uint64_t columns = tensors[i].dims[0];
            g.f32(tensors[i].offset + static_cast<float>(100 * (e / columns) + e % columns));
        }
        g.pad(32);
    }
    return g.bytes();
}

class GgufFamiliesTest : public ::testing::Test {
protected:
    fs::path write(const std::string& bytes) {
        const fs::path path = dir_.path() / "model.gguf";
        std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        return path;
    }
    vkf::test::TempDir dir_{"vkf_test_gguf_families"};
};

// Baichuan, width 4, one head of 4: attn_q, attn_k, attn_v (parts told apart by 1000s).
std::string baichuan(std::uint32_t blocks, bool with_v = true, std::uint64_t k_rows = 4) {
    std::vector<Tensor> tensors = {
        {"token_embd.weight", {4, 6}}, {"blk.0.attn_q.weight", {4, 4}, 0}, {"blk.0.attn_k.weight", {4, k_rows}, 1000}};
    if (with_v) {
        tensors.push_back({"blk.0.attn_v.weight", {4, 4}, 2000});
    }
    tensors.push_back({"output.weight", {4, 6}});
    return gguf("baichuan", tensors, 6, [&](GgufBytes& g) {
        g.kv_u32("baichuan.embedding_length", 4).kv_u32("baichuan.block_count", blocks);
        g.kv_u32("baichuan.attention.head_count", 1).kv_u32("baichuan.feed_forward_length", 12);
        g.kv_f32("baichuan.attention.layer_norm_rms_epsilon", 1e-6f).kv_u32("baichuan.context_length", 64);
    });
}

TEST_F(GgufFamiliesTest, BaichuanWPackIsPutBackTogetherInItsOwnRowOrder) {
    const vkf::GgufModelSource model = vkf::open_gguf_model(vkf::open_gguf(write(baichuan(2))));
    EXPECT_EQ(model.config.family, vkf::ModelFamily::Baichuan);
    EXPECT_EQ(model.config.ffn_hidden, 12u);
    EXPECT_TRUE(model.config.no_bias);
    EXPECT_FALSE(model.config.tie_word_embeddings);
    EXPECT_NEAR(model.config.layer_norm_epsilon, 1e-6, 1e-12);
    const std::vector<float> w_pack = model.checkpoint.read_as_f32("model.layers.0.self_attn.W_pack.weight");
    ASSERT_EQ(w_pack.size(), 12u * 4);
    // conversion/baichuan.py stored q's and k's row j * 2 + i (head_dim 4, half 2) as 2 i + j.
    for (std::uint32_t part = 0; part < 3; ++part) {
        for (std::uint32_t r = 0; r < 4; ++r) {
            const std::uint32_t stored = part == 2 ? r : 2 * (r % 2) + r / 2;
            EXPECT_EQ(w_pack[(part * 4 + r) * 4 + 3], static_cast<float>(1000 * part + 100 * stored + 3))
                << part << " " << r;
        }
    }
}

TEST_F(GgufFamiliesTest, RefusesBaichuan7bAndAMissingOrUnlikePart) {
    EXPECT_NE(vkf::test::error_message([&] { vkf::open_gguf_model(vkf::open_gguf(write(baichuan(2, true, 2)))); })
                  .find("tensors 'blk.0.attn_q.weight' (F32 [4, 4]) and 'blk.0.attn_k.weight' (F32 [2, 4]) are parts "
                        "of one 'model.layers.0.self_attn.W_pack.weight' and must be alike"),
              std::string::npos);
    EXPECT_NE(vkf::test::error_message([&] {
                  vkf::open_gguf_model(vkf::open_gguf(write(baichuan(32))));
              }).find("baichuan.block_count 32 is Baichuan-7B's, which uses rotary positions"),
              std::string::npos);
    EXPECT_NE(vkf::test::error_message([&] {
                  vkf::open_gguf_model(vkf::open_gguf(write(baichuan(2, false))));
              }).find("'model.layers.0.self_attn.W_pack.weight' is split in 3 tensors and part 2 of them is missing"),
              std::string::npos);
}

// Refact, width 4, 2 heads of 2, one K/V head: attn_q [4, 4], attn_k and attn_v [2, 4] (parts
// told apart by 1000s) read as one [q | k | v] of 8 rows; ffn_gate and ffn_up as they are.
std::string refact(std::uint64_t k_rows = 2, std::uint32_t kv_heads = 1) {
    const std::vector<Tensor> tensors = {{"token_embd.weight", {4, 6}},
                                         {"blk.0.attn_q.weight", {4, 4}, 0},
                                         {"blk.0.attn_k.weight", {4, k_rows}, 1000},
                                         {"blk.0.attn_v.weight", {4, 2}, 2000},
                                         {"blk.0.ffn_gate.weight", {4, 256}, 3000},
                                         {"blk.0.ffn_up.weight", {4, 256}, 4000}};
    return gguf("refact", tensors, 7, [&](GgufBytes& g) {
        g.kv_u32("refact.embedding_length", 4).kv_u32("refact.block_count", 1);
        g.kv_u32("refact.attention.head_count", 2).kv_u32("refact.attention.head_count_kv", kv_heads);
        g.kv_u32("refact.feed_forward_length", 256).kv_f32("refact.attention.layer_norm_rms_epsilon", 1e-5f);
        g.kv_u32("refact.context_length", 64);
    });
}

TEST_F(GgufFamiliesTest, RefactQkvIsPutTogetherFromPartsOfUnequalRows) {
    const vkf::GgufModelSource model = vkf::open_gguf_model(vkf::open_gguf(write(refact())));
    const vkf::ModelConfig& c = model.config;
    EXPECT_EQ(c.family, vkf::ModelFamily::Refact);
    EXPECT_EQ(c.n_kv_head, 1u);
    EXPECT_EQ(c.ffn_hidden, 256u);
    EXPECT_TRUE(c.no_bias);
    EXPECT_TRUE(c.tie_word_embeddings);
    EXPECT_NEAR(c.layer_norm_epsilon, 1e-5, 1e-12);
    EXPECT_NO_THROW(vkf::validate(c));
    const std::vector<float> qkv = model.checkpoint.read_as_f32("h.0.attn.qkv.weight");
    ASSERT_EQ(qkv.size(), 8u * 4);
    for (std::uint32_t r = 0; r < 8; ++r) {
        const float part = r < 4 ? 0.0f : r < 6 ? 1000.0f : 2000.0f;
        const std::uint32_t stored = r < 4 ? r : (r - 4) % 2;
        EXPECT_EQ(qkv[r * 4 + 1], part + static_cast<float>(100 * stored + 1)) << r;
    }
    EXPECT_EQ(model.checkpoint.read_as_f32("h.0.mlp.gate_proj.weight")[4 * 5], 3500.0f);
    EXPECT_EQ(model.checkpoint.read_as_f32("h.0.mlp.up_proj.weight")[4 * 5], 4500.0f);
    EXPECT_NE(vkf::test::error_message([&] {
                  vkf::open_gguf_model(vkf::open_gguf(write(refact(4))));
              }).find("tensor 'blk.0.attn_k.weight' has 4 rows; as part 1 of 'h.0.attn.qkv.weight' it must have 2"),
              std::string::npos);
    EXPECT_NE(vkf::test::error_message([&] {
                  vkf::open_gguf_model(vkf::open_gguf(write(refact(2, 2))));
              }).find("refact.attention.head_count_kv is 2: Refact's attention has one K/V head"),
              std::string::npos);
}

// Jais, width 4, 2 heads: a Conv1D matrix stored [out, in] by the converter is presented
// [in, out] again, element (i, o) the stored (o, i).
TEST_F(GgufFamiliesTest, JaisMatricesArePresentedAsConv1dAgain) {
    const auto jais = [&](bool output) {
        std::vector<Tensor> tensors = {{"token_embd.weight", {4, 6}}, {"blk.0.attn_qkv.weight", {4, 12}}};
        if (output) {
            tensors.push_back({"output.weight", {4, 6}});
        }
        return gguf("jais", tensors, 6, [](GgufBytes& g) {
            g.kv_u32("jais.embedding_length", 4).kv_u32("jais.block_count", 1).kv_u32("jais.attention.head_count", 2);
            g.kv_u32("jais.feed_forward_length", 8).kv_f32("jais.attention.layer_norm_epsilon", 1e-5f);
            g.kv_f32("jais.attention.max_alibi_bias", 8.0f);
        });
    };
    const vkf::GgufModelSource model = vkf::open_gguf_model(vkf::open_gguf(write(jais(true))));
    EXPECT_EQ(model.config.family, vkf::ModelFamily::Jais);
    EXPECT_EQ(model.config.softmax_scale, 0.5);  // llama.cpp's 1 / head_dim
    EXPECT_EQ(model.config.embedding_scale, 1.0);
    EXPECT_FALSE(model.config.logit_scale.has_value());
    const vkf::CheckpointTensor* qkv = model.checkpoint.find("h.0.attn.c_attn.weight");
    ASSERT_NE(qkv, nullptr);
    EXPECT_EQ(qkv->info->shape, (std::vector<std::size_t>{4, 12}));
    const std::vector<float> values = model.checkpoint.read_as_f32("h.0.attn.c_attn.weight");
    for (std::uint32_t i = 0; i < 4; ++i) {
        for (std::uint32_t o = 0; o < 12; ++o) {
            EXPECT_EQ(values[i * 12 + o], static_cast<float>(100 * o + i));
        }
    }
    EXPECT_NE(vkf::test::error_message([&] {
                  vkf::open_gguf_model(vkf::open_gguf(write(jais(false))));
              }).find("a jais file without 'output.weight'"),
              std::string::npos);
}

TEST_F(GgufFamiliesTest, MptSettingsComeFromItsTensors) {
    const std::vector<Tensor> tensors = {{"token_embd.weight", {4, 6}},     {"position_embd.weight", {4, 16}},
                                         {"blk.0.attn_q_norm.weight", {4}}, {"blk.0.attn_k_norm.weight", {2}},
                                         {"blk.0.attn_qkv.weight", {4, 8}}, {"blk.0.ffn_up.weight", {4, 10}}};
    const vkf::GgufModelSource model =
        vkf::open_gguf_model(vkf::open_gguf(write(gguf("mpt", tensors, 8, [](GgufBytes& g) {
            g.kv_u32("mpt.embedding_length", 4).kv_u32("mpt.block_count", 1).kv_u32("mpt.attention.head_count", 2);
            g.kv_u32("mpt.attention.head_count_kv", 1).kv_u32("mpt.feed_forward_length", 16);
            g.kv_f32("mpt.attention.layer_norm_epsilon", 1e-5f).kv_f32("mpt.attention.clamp_kqv", 6.0f);
            g.kv_f32("mpt.attention.max_alibi_bias", 0.0f);
        }))));
    const vkf::ModelConfig& c = model.config;
    EXPECT_EQ(c.family, vkf::ModelFamily::Mpt);
    EXPECT_EQ(c.n_kv_head, 1u);
    EXPECT_EQ(c.ffn_hidden, 10u);  // ffn_up's, not the 4 x d_model the converter writes
    EXPECT_EQ(c.clip_qkv, 6.0);
    EXPECT_FALSE(c.alibi);
    EXPECT_TRUE(c.learned_pos_emb);
    EXPECT_TRUE(c.qk_ln);
    EXPECT_TRUE(c.no_bias);
    EXPECT_TRUE(c.tie_word_embeddings);
    EXPECT_NE(model.checkpoint.find("blocks.0.attn.q_ln.weight"), nullptr);
    EXPECT_NE(model.checkpoint.find("wpe.weight"), nullptr);
}

TEST_F(GgufFamiliesTest, JinaBertV2IsAnEncoder) {
    const std::vector<Tensor> tensors = {{"token_embd.weight", {4, 6}},
                                         {"token_types.weight", {4, 2}},
                                         {"blk.1.ffn_up.weight", {4, 16}},
                                         {"blk.1.layer_output_norm.bias", {4}}};
    const fs::path path = write(gguf("jina-bert-v2", tensors, 6, [](GgufBytes& g) {
        g.kv_u32("jina-bert-v2.embedding_length", 4).kv_u32("jina-bert-v2.block_count", 2);
        g.kv_u32("jina-bert-v2.attention.head_count", 2).kv_u32("jina-bert-v2.feed_forward_length", 8);
        g.kv_f32("jina-bert-v2.attention.layer_norm_epsilon", 1e-12f).kv_u32("jina-bert-v2.context_length", 512);
    }));
    const vkf::EncoderConfig config = vkf::read_encoder_config(path);
    EXPECT_EQ(config.hidden, 4u);
    EXPECT_EQ(config.n_layer, 2u);
    EXPECT_EQ(config.intermediate, 8u);
    EXPECT_EQ(config.vocab_size, 6u);
    EXPECT_EQ(config.type_vocab_size, 2u);
    EXPECT_EQ(config.max_position_embeddings, 512u);
    const vkf::ShardedCheckpoint checkpoint = vkf::open_encoder_checkpoint(path);
    EXPECT_NE(checkpoint.find("encoder.layer.1.mlp.gated_layers.weight"), nullptr);
    EXPECT_NE(checkpoint.find("encoder.layer.1.mlp.layernorm.bias"), nullptr);
    EXPECT_NE(checkpoint.find("embeddings.token_type_embeddings.weight"), nullptr);
    EXPECT_NE(vkf::test::error_message([&] {
                  vkf::open_gguf_model(vkf::open_gguf(path));
              }).find("vkformer reads 'bloom', 'mpt', 'baichuan', 'jais' and 'refact'; this encoder is vkf-embed's)"),
              std::string::npos);
}

// tests/text/data/bert_wordpiece.json's vocabulary as conversion/bert.py writes it (phantom-space
// tokens, special tokens CONTROL) with gguf-py's SpecialVocab's add_bos/add_eos/add_sep (what it
// reads from tokenizer.json's TemplateProcessing: true, true, false): the translated
// tokenizer gives that tokenizer.json's ids, [CLS] and [SEP] included.
TEST_F(GgufFamiliesTest, BertWordPieceAndAddSpecialTokens) {
    std::ifstream in(std::string(VKF_TEXT_DATA) + "/bert_wordpiece.json");
    std::stringstream text;
    text << in.rdbuf();
    const nlohmann::json original = nlohmann::json::parse(text.str());
    std::map<std::uint64_t, std::pair<std::string, std::uint32_t>> by_id;
    for (const auto& [token, id] : original["model"]["vocab"].items()) {
        const bool piece = token.starts_with("##");
        by_id[id.get<std::uint64_t>()] = {piece ? token.substr(2) : "\xe2\x96\x81" + token, 1};
    }
    for (const auto& added : original["added_tokens"]) {
        by_id[added["id"].get<std::uint64_t>()] = {added["content"].get<std::string>(), 3};
    }
    ASSERT_EQ(by_id.rbegin()->first + 1, by_id.size());
    const auto file = [&](bool add_special) {
        GgufBytes g;
        g.header(0, add_special ? 11 : 6).kv_str("general.architecture", "jina-bert-v2");
        g.kv_str("tokenizer.ggml.model", "bert").kv_str("tokenizer.ggml.pre", "jina-v2-en");
        g.kv_u32("tokenizer.ggml.unknown_token_id", 1);
        g.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(by_id.size());
        for (const auto& [id, entry] : by_id) {
            g.str(entry.first);
        }
        g.str("tokenizer.ggml.token_type").u32(9).u32(5).u64(by_id.size());
        for (const auto& [id, entry] : by_id) {
            g.u32(entry.second);
        }
        if (add_special) {
            g.kv_u32("tokenizer.ggml.bos_token_id", 2).kv_u32("tokenizer.ggml.eos_token_id", 3);
            g.str("tokenizer.ggml.add_bos_token").u32(7).u8(1);
            g.str("tokenizer.ggml.add_eos_token").u32(7).u8(1);
            g.str("tokenizer.ggml.add_sep_token").u32(7).u8(0);  // SpecialVocab writes all three
        }
        return g.bytes();
    };
    const vkf::text::Tokenizer expected = vkf::text::Tokenizer::parse(text.str(), "bert_wordpiece.json");
    const std::string sample = "Hello, World! The unaffable runner's running; hello again.";
    const auto translated = vkf::tokenizer_json_from_gguf(vkf::open_gguf(write(file(true))));
    ASSERT_TRUE(translated.has_value());
    const vkf::text::Tokenizer ours = vkf::text::Tokenizer::parse(*translated, "gguf");
    EXPECT_EQ(ours.encode(sample), expected.encode(sample));
    EXPECT_EQ(ours.encode(sample).front(), 2u);
    nlohmann::json vocab = original["model"]["vocab"];
    for (const auto& added : original["added_tokens"]) {
        vocab[added["content"].get<std::string>()] = added["id"];
    }
    EXPECT_EQ(nlohmann::json::parse(*translated)["model"]["vocab"], vocab);
    // Without the flags, llama.cpp's bert defaults: BOS 101 and SEP 102, which this
    // vocabulary of 59 lacks: refused naming the key.
    EXPECT_NE(vkf::test::error_message([&] {
                  vkf::tokenizer_json_from_gguf(vkf::open_gguf(write(file(false))));
              }).find("tokenizer.ggml.bos_token_id 101 is not one of the 59 tokens"),
              std::string::npos);
}

}  // namespace
