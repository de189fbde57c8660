// A Hugging Face Refact checkpoint (attn.q + attn.kv, mlp.gate_up_proj) read under the slots'
// names attn.qkv, mlp.gate_proj and mlp.up_proj (host/spec/refact_layout.hpp): as
// write_random_checkpoint writes it, in one file and in shards, and the refusals.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "host/io/safetensors.hpp"
#include "host/io/safetensors_writer.hpp"
#include "host/spec/model_config.hpp"
#include "host/spec/model_tensors.hpp"
#include "host/spec/random_weights.hpp"
#include "host/spec/refact_layout.hpp"
#include "tests/support/test_support.hpp"

namespace {

namespace fs = std::filesystem;

vkf::ModelConfig refact() {
    vkf::ModelConfig config{.family = vkf::ModelFamily::Refact,
                            .vocab_size = 64,
                            .hidden = 32,
                            .n_layer = 2,
                            .n_head = 4,
                            .n_kv_head = 1,
                            .head_dim = 8,
                            .ffn_hidden = 256,  // 2/3 of 4 x 32, rounded up to 256
                            .no_bias = true,
                            .tie_word_embeddings = false};
    vkf::validate(config);
    return config;
}

std::vector<float> concatenated(std::vector<float> a, const std::vector<float>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

TEST(RefactLayout, HuggingFaceTensorsReadAsTheSlots) {
    const vkf::test::TempDir dir("vkf_test_refact_layout");
    const vkf::ModelConfig config = refact();
    vkf::write_random_checkpoint(dir.path() / "one", config, 7, vkf::DType::F32);
    vkf::write_random_checkpoint(dir.path() / "shards", config, 7, vkf::DType::F32, 5);
    const vkf::ShardedCheckpoint stored = vkf::open_checkpoint(dir.path() / "one");
    EXPECT_TRUE(vkf::holds_refact_layout(stored));
    EXPECT_EQ(stored.find("h.0.attn.qkv.weight"), nullptr);
    EXPECT_EQ(stored.tensor_info("h.1.attn.kv.weight").shape, (std::vector<std::size_t>{16, 32}));
    EXPECT_EQ(stored.tensor_info("h.1.mlp.gate_up_proj.weight").shape, (std::vector<std::size_t>{512, 32}));
    for (const char* layout : {"one", "shards"}) {
        const vkf::ShardedCheckpoint view = vkf::with_refact_layout(vkf::open_checkpoint(dir.path() / layout));
        EXPECT_NO_THROW(vkf::check_checkpoint(view, config)) << layout;
        for (const char* layer : {"h.0.", "h.1."}) {
            const std::string p = layer;
            EXPECT_EQ(view.read_as_f32(p + "attn.qkv.weight"),
                      concatenated(stored.read_as_f32(p + "attn.q.weight"), stored.read_as_f32(p + "attn.kv.weight")))
                << layout << " " << layer;
            const std::vector<float> fused = stored.read_as_f32(p + "mlp.gate_up_proj.weight");
            const auto half = static_cast<std::ptrdiff_t>(fused.size() / 2);
            EXPECT_EQ(view.read_as_f32(p + "mlp.gate_proj.weight"),
                      std::vector<float>(fused.begin(), fused.begin() + half));
            EXPECT_EQ(view.read_as_f32(p + "mlp.up_proj.weight"),
                      std::vector<float>(fused.begin() + half, fused.end()));
            EXPECT_EQ(view.read_as_f32(p + "ln_1.weight"), stored.read_as_f32(p + "ln_1.weight"));
        }
        // A range across q's end and into kv, as the loader's chunks read it.
        const vkf::CheckpointTensor& qkv = view.at("h.0.attn.qkv.weight");
        std::vector<std::byte> middle(64);
        qkv.file->read_raw_into(*qkv.info, 32 * 32 * 4 - 32, middle);
        const std::vector<std::byte> q = stored.read_raw("h.0.attn.q.weight"),
                                     kv = stored.read_raw("h.0.attn.kv.weight");
        EXPECT_TRUE(std::equal(middle.begin(), middle.begin() + 32, q.end() - 32));
        EXPECT_TRUE(std::equal(middle.begin() + 32, middle.end(), kv.begin()));
    }
    // Other checkpoints are left as they are.
    vkf::ModelConfig bloom{.family = vkf::ModelFamily::Bloom,
                           .vocab_size = 64,
                           .hidden = 32,
                           .n_layer = 1,
                           .n_head = 4,
                           .n_kv_head = 4,
                           .head_dim = 8,
                           .ffn_hidden = 128};
    vkf::validate(bloom);
    vkf::write_random_checkpoint(dir.path() / "bloom", bloom, 7, vkf::DType::F32);
    EXPECT_FALSE(vkf::holds_refact_layout(vkf::open_checkpoint(dir.path() / "bloom")));
}

TEST(RefactLayout, RefusesAMissingPartAndAnOddGateUp) {
    const vkf::test::TempDir dir("vkf_test_refact_layout_bad");
    const auto zeros = [](std::uint64_t, std::span<float> out) { std::fill(out.begin(), out.end(), 0.0f); };
    const auto open = [&](const std::string& name, std::vector<vkf::TensorSource> tensors) {
        vkf::write_safetensors_checkpoint(dir.path() / name, tensors, vkf::DType::F32);
        return vkf::test::error_message([&] { vkf::with_refact_layout(vkf::open_checkpoint(dir.path() / name)); });
    };
    EXPECT_NE(open("no_kv", {{"transformer.h.0.attn.q.weight", {4, 4}, zeros},
                             {"transformer.h.0.mlp.gate_up_proj.weight", {4, 4}, zeros}})
                  .find("tensor 'transformer.h.0.attn.q.weight' has no 'transformer.h.0.attn.kv.weight' beside it"),
              std::string::npos);
    EXPECT_NE(open("no_q", {{"transformer.h.0.attn.kv.weight", {2, 4}, zeros}})
                  .find("tensor 'transformer.h.0.attn.kv.weight' has no 'transformer.h.0.attn.q.weight' beside it"),
              std::string::npos);
    EXPECT_NE(open("odd", {{"transformer.h.0.mlp.gate_up_proj.weight", {3, 4}, zeros}})
                  .find("tensor 'transformer.h.0.mlp.gate_up_proj.weight' has 3 rows, not the gate's and up's halves"),
              std::string::npos);
    EXPECT_NE(open("unlike", {{"transformer.h.0.attn.q.weight", {4, 4}, zeros},
                              {"transformer.h.0.attn.kv.weight", {2, 8}, zeros}})
                  .find("and must have one dtype and row length"),
              std::string::npos);
}

}  // namespace
