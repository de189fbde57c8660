// A GGUF BLOOM whose matrices are K-quants of different types, as llama-quantize's Q4_K_M and
// Q5_K_M write them (issue 44): each matrix is read in its own super-blocks by its own kernel
// (LinearWeights::quant, one matmul plan per layer), the embedding and the tied head in theirs.
// Two layers whose matrices' types differ from their neighbours' and mostly from the other
// layer's same matrix, the embedding (the tied head) Q6_K where most matrices are Q4_K: a
// format taken from the model, from another matrix or from the first layer misreads the blocks
// (or their sizes) and the logits leave the double-precision reference on the exact
// dequantized weights (host/reference/model.hpp). The batch's KV pool and logits are
// poisoned (BatchOptions::poison), so a row never written shows as NaN. End to end against
// llama.cpp: tests/apps/kquant_perplexity_test.py.

#include "host/model/batch.hpp"
#include "host/quant/gguf_tensor_file.hpp"
#include "host/quant/kquant_format.hpp"
#include "host/quant/quantized_checkpoint.hpp"
#include "host/reference/model.hpp"
#include "host/util/compare.hpp"
#include "tests/io/gguf_test_writer.hpp"
#include "tests/ops/kquant_blocks.hpp"
#include "tests/support/vulkan_test.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace vkf::test {
namespace {

namespace fs = std::filesystem;

constexpr std::uint32_t kHidden = 256, kHeads = 4, kFfn = 1024, kVocab = 48, kLayers = 2;
constexpr std::uint32_t kF32 = 0, kQ4K = 12, kQ5K = 13, kQ6K = 14, kIQ4NL = 20;  // ggml type ids

struct Tensor {
    std::string name;
    std::vector<std::uint64_t> dims;  // innermost first, as in the file
    std::uint32_t type = kF32;
};

QuantFormat format_of(std::uint32_t type) {
    return type == kQ4K ? QuantFormat::Q4_K : type == kQ5K ? QuantFormat::Q5_K : QuantFormat::Q6_K;
}

// Each layer's qkv, attn_output, ffn_up, ffn_down types.
const std::uint32_t kLayerTypes[kLayers][4] = {{kQ5K, kQ4K, kQ4K, kQ6K}, {kQ6K, kQ5K, kQ4K, kQ4K}};

// `last_down`: layer 1's ffn_down type.
std::vector<Tensor> mix_tensors(std::uint32_t last_down) {
    std::vector<Tensor> t = {{"token_embd.weight", {kHidden, kVocab}, kQ6K},
                             {"token_embd_norm.weight", {kHidden}},
                             {"token_embd_norm.bias", {kHidden}}};
    for (std::uint32_t l = 0; l < kLayers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        const std::uint32_t* types = kLayerTypes[l];
        t.push_back({p + "attn_norm.weight", {kHidden}});
        t.push_back({p + "attn_norm.bias", {kHidden}});
        t.push_back({p + "attn_qkv.weight", {kHidden, 3 * kHidden}, types[0]});
        t.push_back({p + "attn_qkv.bias", {3 * kHidden}});
        t.push_back({p + "attn_output.weight", {kHidden, kHidden}, types[1]});
        t.push_back({p + "attn_output.bias", {kHidden}});
        t.push_back({p + "ffn_norm.weight", {kHidden}});
        t.push_back({p + "ffn_norm.bias", {kHidden}});
        t.push_back({p + "ffn_up.weight", {kHidden, kFfn}, types[2]});
        t.push_back({p + "ffn_up.bias", {kFfn}});
        t.push_back({p + "ffn_down.weight", {kFfn, kHidden}, l + 1 == kLayers ? last_down : types[3]});
        t.push_back({p + "ffn_down.bias", {kHidden}});
    }
    t.push_back({"output_norm.weight", {kHidden}});
    t.push_back({"output_norm.bias", {kHidden}});
    return t;
}

// The tensors' bytes: random super-blocks (kquant_blocks.hpp) for the matrices; norm weights
// near 1 and small biases as F32.
std::vector<std::uint8_t> tensor_bytes(const Tensor& t, std::uint64_t seed) {
    if (t.type == kIQ4NL) {
        return std::vector<std::uint8_t>(t.dims[1] * t.dims[0] / 32 * 18);  // blocks of 32 in 18 bytes
    }
    if (t.type != kF32) {
        return random_blocks(format_of(t.type), static_cast<std::uint32_t>(t.dims[1]),
                             static_cast<std::uint32_t>(t.dims[0]), seed);
    }
    std::vector<std::uint8_t> out(t.dims[0] * 4);
    const bool weight = t.name.ends_with(".weight");
    for (std::size_t i = 0; i < t.dims[0]; ++i) {
        const float v = (weight ? 1.0f : 0.0f) + 0.05f * std::sin(static_cast<float>(i * 7 + seed));
        std::memcpy(out.data() + 4 * i, &v, 4);
    }
    return out;
}

fs::path write_mix(const fs::path& dir, std::uint32_t last_down = kLayerTypes[kLayers - 1][3]) {
    const std::vector<Tensor> tensors = mix_tensors(last_down);
    GgufBytes g;
    g.header(tensors.size(), 9).kv_str("general.architecture", "bloom");
    g.kv_u32("bloom.context_length", 64).kv_u32("bloom.embedding_length", kHidden);
    g.kv_u32("bloom.feed_forward_length", kFfn).kv_u32("bloom.block_count", kLayers);
    g.kv_u32("bloom.attention.head_count", kHeads).kv_u32("bloom.attention.head_count_kv", kHeads);
    g.kv_f32("bloom.attention.layer_norm_epsilon", 1e-5f).kv_u32("tokenizer.ggml.eos_token_id", 2);
    std::vector<std::vector<std::uint8_t>> data;
    std::uint64_t offset = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        data.push_back(tensor_bytes(tensors[i], 100 + i));
        g.tensor(tensors[i].name, tensors[i].dims, tensors[i].type, offset);
        offset += (data.back().size() + 31) / 32 * 32;
    }
    g.pad(32);
    for (const std::vector<std::uint8_t>& d : data) {
        g.raw(d.data(), d.size()).pad(32);
    }
    const fs::path path = dir / "mix.gguf";
    std::ofstream(path, std::ios::binary).write(g.bytes().data(), static_cast<std::streamsize>(g.size()));
    return path;
}

class KQuantMix : public VulkanTest {};

TEST_F(KQuantMix, EachMatrixIsReadInItsOwnFormat) {
    TempDir dir("vkf_test_kquant_mix");
    const fs::path path = write_mix(dir.path());
    const Model model(ctx(), path);
    // Q4_K has the most matrices (0's attn_out and up, 1's up and down): the model's format.
    EXPECT_EQ(model.weight_format(), (WeightFormat{.dense = DType::F16, .quant = QuantFormat::Q4_K}));
    EXPECT_EQ(model.weights().embedding_quant, QuantFormat::Q6_K);
    for (std::uint32_t l = 0; l < kLayers; ++l) {
        const LayerWeights& w = model.weights().layers[l];
        EXPECT_EQ(w.qkv.quant, format_of(kLayerTypes[l][0])) << "layer " << l;
        EXPECT_EQ(w.attn_out.quant, format_of(kLayerTypes[l][1])) << "layer " << l;
        EXPECT_EQ(w.up.quant, format_of(kLayerTypes[l][2])) << "layer " << l;
        EXPECT_EQ(w.down.quant, format_of(kLayerTypes[l][3])) << "layer " << l;
    }

    const std::vector<std::uint32_t> ids = {3, 17, 40, 9, 9, 28, 1, 44, 12, 5, 33};
    Batch batch(model, BatchOptions{.max_tokens = 32, .chunk = 4, .kv_dtype = DType::F32, .poison = true});
    const SequenceId id = batch.add();
    batch.feed(id, ids, Logits::All);
    std::vector<float> gpu;
    for (int steps = 0; gpu.size() < ids.size() * kVocab && steps < 16; ++steps) {
        for (const SequenceOutput& out : batch.step().ran) {
            gpu.insert(gpu.end(), out.logits.begin(), out.logits.end());
        }
    }
    ASSERT_EQ(gpu.size(), ids.size() * kVocab);

    const reference::Model reference(model.config(), model.checkpoint(), {.round_weights_to_f16 = true});
    const std::vector<double> ref = reference.forward(ids);
    ErrorStats worst{};
    for (std::size_t r = 0; r < ids.size(); ++r) {
        const ErrorStats e = compare_to_reference(std::span(gpu).subspan(r * kVocab, kVocab),
                                                  std::span(ref).subspan(r * kVocab, kVocab));
        EXPECT_EQ(e.first_nonfinite, SIZE_MAX) << "row " << r;
        worst = e.max_rel > worst.max_rel ? e : worst;
    }
    std::printf("K-quant mix (Q4_K, Q5_K, Q6_K): worst row against the reference: %s\n", describe(worst).c_str());
    EXPECT_LT(worst.max_rel, 2e-5) << describe(worst);
}

TEST_F(KQuantMix, TheCheckpointNamesEachMatrixFormat) {
    TempDir dir("vkf_test_kquant_mix_names");
    const ShardedCheckpoint checkpoint = open_model_checkpoint(write_mix(dir.path()));
    const QuantFormat base = checkpoint_quantization(checkpoint);
    EXPECT_EQ(base, QuantFormat::Q4_K);
    EXPECT_EQ(tensor_quantization(checkpoint, "h.0.self_attention.query_key_value.weight", base), QuantFormat::Q5_K);
    EXPECT_EQ(tensor_quantization(checkpoint, "h.1.mlp.dense_4h_to_h.weight", base), QuantFormat::Q4_K);
    EXPECT_EQ(tensor_quantization(checkpoint, "word_embeddings.weight", base), QuantFormat::Q6_K);
    EXPECT_EQ(
        checkpoint.at("word_embeddings.weight").file->metadata().at("vkformer.quantization:word_embeddings.weight"),
        "q6_K");
}

TEST_F(KQuantMix, AMatrixOfATypeWithoutAKernelIsRefusedByName) {
    TempDir dir("vkf_test_kquant_mix_iq4");
    const fs::path path = write_mix(dir.path(), kIQ4NL);
    const std::string e = error_message([&] { Model(ctx(), path); });
    EXPECT_NE(e.find("'blk.1.ffn_down.weight'"), std::string::npos) << e;
    EXPECT_NE(e.find("IQ4_NL"), std::string::npos) << e;
}

}  // namespace
}  // namespace vkf::test
