// The CPU reference model (host/reference/model.hpp): errors for bad ids and incomplete
// checkpoints, determinism across runs and thread counts, causality, fp16 weight rounding,
// and hand-checkable BLOOM and MPT models built tensor by tensor. Its agreement with an
// independent NumPy implementation on random checkpoints is checked by the
// reference_model_numpy CTest (tests/reference/model_numpy.py).

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "host/io/safetensors.hpp"
#include "host/reference/model.hpp"
#include "host/spec/model_config.hpp"
#include "host/spec/random_weights.hpp"
#include "tests/support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using vkf::ModelConfig;
using vkf::ModelFamily;
using vkf::reference::Model;
using vkf::reference::ModelOptions;

ModelConfig small_config(ModelFamily family) {
    ModelConfig c{.family = family};
    c.vocab_size = 97;
    c.hidden = family == ModelFamily::Bloom ? 48 : 36;
    c.n_layer = 2;
    c.n_head = family == ModelFamily::Bloom ? 4 : 6;
    c.n_kv_head = c.n_head;
    c.head_dim = c.hidden / c.n_head;
    c.ffn_hidden = 4 * c.hidden;
    if (family == ModelFamily::Mpt) {
        c.no_bias = true;
        c.clip_qkv = 0.3;
    }
    return c;
}

double max_abs(const std::vector<double>& v) {
    double m = 0.0;
    for (double x : v) {
        m = std::max(m, std::abs(x));
    }
    return m;
}

// A single-file F32 safetensors checkpoint written from explicit tensors.
using TensorMap = std::map<std::string, std::pair<std::vector<std::size_t>, std::vector<float>>>;

void write_f32_safetensors(const fs::path& path, const TensorMap& tensors) {
    std::string header = "{";
    std::uint64_t offset = 0;
    for (const auto& [name, tensor] : tensors) {
        const auto& [shape, values] = tensor;
        header += (header.size() > 1 ? "," : "") + std::string("\"") + name + "\":{\"dtype\":\"F32\",\"shape\":[";
        for (std::size_t i = 0; i < shape.size(); ++i) {
            header += (i ? "," : "") + std::to_string(shape[i]);
        }
        const std::uint64_t end = offset + values.size() * 4;
        header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
        offset = end;
    }
    header += "}";
    std::ofstream out(path, std::ios::binary);
    const std::uint64_t length = header.size();
    for (int i = 0; i < 8; ++i) {
        out.put(static_cast<char>((length >> (8 * i)) & 0xff));
    }
    out << header;
    for (const auto& [name, tensor] : tensors) {
        out.write(reinterpret_cast<const char*>(tensor.second.data()),
                  static_cast<std::streamsize>(tensor.second.size() * 4));
    }
    ASSERT_TRUE(out.good());
}

class ReferenceModelTest : public ::testing::Test {
protected:
    fs::path write_random(const std::string& name, const ModelConfig& config, vkf::DType dtype,
                          std::uint64_t seed = 3) {
        const fs::path path = dir_.path() / name;
        vkf::write_random_checkpoint(path, config, seed, dtype);
        return path;
    }

    vkf::test::TempDir dir_{"vkf_test_reference_model"};
};

const std::vector<std::uint32_t> kIds = {5, 96, 0, 17, 17, 42, 3, 88, 61, 7, 29};

TEST_F(ReferenceModelTest, ShapeAndFiniteNonDegenerateLogits) {
    for (ModelFamily family : {ModelFamily::Bloom, ModelFamily::Mpt}) {
        const ModelConfig config = small_config(family);
        const auto checkpoint = vkf::open_checkpoint(write_random("m", config, vkf::DType::F16));
        const Model model(config, checkpoint);
        EXPECT_EQ(model.config(), config);
        const std::vector<double> logits = model.forward(kIds);
        ASSERT_EQ(logits.size(), kIds.size() * config.vocab_size);
        double mean = 0.0;
        for (double v : logits) {
            ASSERT_TRUE(std::isfinite(v));
            mean += v;
        }
        mean /= static_cast<double>(logits.size());
        double var = 0.0;
        for (double v : logits) {
            var += (v - mean) * (v - mean);
        }
        EXPECT_GT(var / static_cast<double>(logits.size()), 1e-4);
        EXPECT_TRUE(model.forward({}).empty());
    }
}

TEST_F(ReferenceModelTest, IdsOutOfRangeThrowNamingTheId) {
    const ModelConfig config = small_config(ModelFamily::Bloom);
    const auto checkpoint = vkf::open_checkpoint(write_random("m", config, vkf::DType::F32));
    const Model model(config, checkpoint);
    const std::vector<std::uint32_t> ids = {1, 2, 97, 3};
    const std::string m = vkf::test::error_message([&] { model.forward(ids); });
    EXPECT_NE(m.find("token id 97"), std::string::npos) << m;
    EXPECT_NE(m.find("position 2"), std::string::npos) << m;
    EXPECT_NE(m.find("vocab_size 97"), std::string::npos) << m;
    const std::vector<std::uint32_t> huge = {0xFFFFFFFFu};
    EXPECT_NE(vkf::test::error_message([&] { model.forward(huge); }).find("4294967295"), std::string::npos);
}

TEST_F(ReferenceModelTest, MissingOrMisshapenTensorsThrowNamingThem) {
    const ModelConfig no_bias = small_config(ModelFamily::Mpt);
    const auto checkpoint = vkf::open_checkpoint(write_random("m", no_bias, vkf::DType::F16));

    ModelConfig with_bias = no_bias;
    with_bias.no_bias = false;  // the checkpoint has no bias tensors
    std::string m = vkf::test::error_message([&] { Model model(with_bias, checkpoint); });
    EXPECT_NE(m.find("blocks.0.attn.Wqkv.bias"), std::string::npos) << m;
    EXPECT_NE(m.find("missing"), std::string::npos) << m;

    ModelConfig untied = no_bias;
    untied.tie_word_embeddings = false;
    m = vkf::test::error_message([&] { Model model(untied, checkpoint); });
    EXPECT_NE(m.find("lm_head.weight"), std::string::npos) << m;

    ModelConfig wider = no_bias;
    wider.ffn_hidden = 2 * no_bias.hidden;
    m = vkf::test::error_message([&] { Model model(wider, checkpoint); });
    EXPECT_NE(m.find("ffn.up_proj.weight"), std::string::npos) << m;

    ModelConfig invalid = no_bias;
    invalid.head_dim = 5;
    EXPECT_THROW(Model(invalid, checkpoint), vkf::Error);
}

TEST_F(ReferenceModelTest, DeterministicAcrossRunsAndThreadCounts) {
    for (ModelFamily family : {ModelFamily::Bloom, ModelFamily::Mpt}) {
        const ModelConfig config = small_config(family);
        const auto checkpoint = vkf::open_checkpoint(write_random("m", config, vkf::DType::BF16));
        const Model one(config, checkpoint, ModelOptions{.threads = 1});
        const Model three(config, checkpoint, ModelOptions{.threads = 3});
        const Model many(config, checkpoint, ModelOptions{.threads = 16});
        const std::vector<double> expected = one.forward(kIds);
        EXPECT_EQ(one.forward(kIds), expected);
        EXPECT_EQ(three.forward(kIds), expected);  // every sum in the same order: bit-identical
        EXPECT_EQ(many.forward(kIds), expected);
    }
}

TEST_F(ReferenceModelTest, PrefixLogitsAreTheFirstRowsOfTheFullSequence) {
    for (ModelFamily family : {ModelFamily::Bloom, ModelFamily::Mpt}) {
        const ModelConfig config = small_config(family);
        const auto checkpoint = vkf::open_checkpoint(write_random("m", config, vkf::DType::F32));
        const Model model(config, checkpoint);
        const std::vector<double> full = model.forward(kIds);
        const double scale = max_abs(full);
        for (std::size_t prefix : {1u, 2u, 5u, 10u}) {
            const std::vector<double> part = model.forward(std::span(kIds).first(prefix));
            ASSERT_EQ(part.size(), prefix * config.vocab_size);
            for (std::size_t i = 0; i < part.size(); ++i) {
                ASSERT_NEAR(part[i], full[i], 1e-13 * scale) << "prefix " << prefix << ", element " << i;
            }
        }
        // And a later token does change later rows (the model is not position-blind).
        std::vector<std::uint32_t> changed = kIds;
        changed[4] = 60;
        const std::vector<double> other = model.forward(changed);
        const std::size_t v = config.vocab_size;
        EXPECT_EQ(std::vector<double>(other.begin(), other.begin() + 4 * v),
                  std::vector<double>(full.begin(), full.begin() + 4 * v));
        EXPECT_GT(std::abs(other[6 * v + 3] - full[6 * v + 3]), 1e-9 * scale);
    }
}

TEST_F(ReferenceModelTest, RoundingWeightsToF16MatchesAnF16Checkpoint) {
    const ModelConfig config = small_config(ModelFamily::Bloom);
    const auto f32 = vkf::open_checkpoint(write_random("f32", config, vkf::DType::F32, 9));
    const auto f16 = vkf::open_checkpoint(write_random("f16", config, vkf::DType::F16, 9));
    const std::vector<double> exact = Model(config, f32).forward(kIds);
    const std::vector<double> rounded = Model(config, f32, ModelOptions{.round_weights_to_f16 = true}).forward(kIds);
    const std::vector<double> stored = Model(config, f16).forward(kIds);
    EXPECT_EQ(rounded, stored);  // the writer rounds the same float values to fp16
    double diff = 0.0;
    for (std::size_t i = 0; i < exact.size(); ++i) {
        diff = std::max(diff, std::abs(exact[i] - rounded[i]));
    }
    EXPECT_GT(diff, 1e-7 * max_abs(exact));
    EXPECT_LT(diff, 1e-2 * max_abs(exact));
}

TEST_F(ReferenceModelTest, ProgressIsReportedPerLayer) {
    const ModelConfig config = small_config(ModelFamily::Mpt);
    const auto checkpoint = vkf::open_checkpoint(write_random("m", config, vkf::DType::F16));
    std::vector<std::pair<std::uint32_t, std::uint32_t>> calls;
    const Model model(config, checkpoint, ModelOptions{.progress = [&](std::uint32_t layer, std::uint32_t n) {
                          calls.emplace_back(layer, n);
                      }});
    model.forward(kIds);
    EXPECT_EQ(calls, (std::vector<std::pair<std::uint32_t, std::uint32_t>>{{0, 2}, {1, 2}}));
}

// LayerNorm without affine parameters, in double.
std::vector<double> plain_layer_norm(std::vector<double> x, double eps) {
    double mean = 0.0;
    for (double v : x) {
        mean += v;
    }
    mean /= static_cast<double>(x.size());
    double var = 0.0;
    for (double v : x) {
        var += (v - mean) * (v - mean);
    }
    var /= static_cast<double>(x.size());
    for (double& v : x) {
        v = (v - mean) / std::sqrt(var + eps);
    }
    return x;
}

// BLOOM, 1 layer, every linear weight zero: attention yields its value bias whatever the
// softmax, so x1 = LN_emb(e) + dense.bias, and the MLP adds dense_4h_to_h.bias.
TEST_F(ReferenceModelTest, HandCheckedBloomWithZeroWeights) {
    ModelConfig c{.family = ModelFamily::Bloom};
    c.vocab_size = 3;
    c.hidden = 4;
    c.n_layer = 1;
    c.n_head = 2;
    c.n_kv_head = 2;
    c.head_dim = 2;
    c.ffn_hidden = 16;
    const std::vector<float> embedding = {0.5f,  -1.0f, 2.0f,  0.25f,  //
                                          1.5f,  1.0f,  -0.5f, 0.0f,   //
                                          -2.0f, 0.75f, 0.5f,  1.0f};
    const std::vector<float> ones(4, 1.0f), zeros4(4, 0.0f);
    const std::vector<float> dense_bias = {0.1f, -0.2f, 0.3f, 0.05f};
    const std::vector<float> down_bias = {-0.05f, 0.4f, 0.0f, 0.2f};
    std::vector<float> qkv_bias(12);
    for (std::size_t i = 0; i < 12; ++i) {
        qkv_bias[i] = 0.1f * static_cast<float>(i) - 0.5f;
    }
    const TensorMap tensors = {
        {"word_embeddings.weight", {{3, 4}, embedding}},
        {"word_embeddings_layernorm.weight", {{4}, ones}},
        {"word_embeddings_layernorm.bias", {{4}, zeros4}},
        {"h.0.input_layernorm.weight", {{4}, ones}},
        {"h.0.input_layernorm.bias", {{4}, zeros4}},
        {"h.0.self_attention.query_key_value.weight", {{12, 4}, std::vector<float>(48, 0.0f)}},
        {"h.0.self_attention.query_key_value.bias", {{12}, qkv_bias}},
        {"h.0.self_attention.dense.weight", {{4, 4}, std::vector<float>(16, 0.0f)}},
        {"h.0.self_attention.dense.bias", {{4}, dense_bias}},
        {"h.0.post_attention_layernorm.weight", {{4}, ones}},
        {"h.0.post_attention_layernorm.bias", {{4}, zeros4}},
        {"h.0.mlp.dense_h_to_4h.weight", {{16, 4}, std::vector<float>(64, 0.0f)}},
        {"h.0.mlp.dense_h_to_4h.bias", {{16}, std::vector<float>(16, 0.3f)}},
        {"h.0.mlp.dense_4h_to_h.weight", {{4, 16}, std::vector<float>(64, 0.0f)}},
        {"h.0.mlp.dense_4h_to_h.bias", {{4}, down_bias}},
        {"ln_f.weight", {{4}, ones}},
        {"ln_f.bias", {{4}, zeros4}},
    };
    fs::create_directories(dir_.path() / "bloom");
    write_f32_safetensors(dir_.path() / "bloom" / "model.safetensors", tensors);
    const auto checkpoint = vkf::open_checkpoint(dir_.path() / "bloom");
    const Model model(c, checkpoint);
    const std::vector<std::uint32_t> ids = {2, 0, 1};
    const std::vector<double> logits = model.forward(ids);
    ASSERT_EQ(logits.size(), 9u);
    for (std::size_t t = 0; t < ids.size(); ++t) {
        std::vector<double> e(4);
        for (std::size_t i = 0; i < 4; ++i) {
            e[i] = embedding[ids[t] * 4 + i];
        }
        std::vector<double> x = plain_layer_norm(e, c.layer_norm_epsilon);
        for (std::size_t i = 0; i < 4; ++i) {
            x[i] += static_cast<double>(dense_bias[i]) + static_cast<double>(down_bias[i]);
        }
        x = plain_layer_norm(x, c.layer_norm_epsilon);
        for (std::size_t v = 0; v < 3; ++v) {
            double want = 0.0;
            for (std::size_t i = 0; i < 4; ++i) {
                want += x[i] * embedding[v * 4 + i];
            }
            EXPECT_NEAR(logits[t * 3 + v], want, 1e-14) << "token " << t << ", vocab " << v;
        }
    }
}

// MPT, 1 block, no biases: q = k = 0 so the scores are ALiBi alone (slopes 1/16, 1/256 for
// 2 heads), v = the normed input, out_proj = identity, MLP weights zero. Then
// x1_i = e_i + sum_{j<=i} softmax_j(slope_h (j - i)) * LN(e_j) per head's channels, and
// the logits are LN(x1) . wte^T.
TEST_F(ReferenceModelTest, HandCheckedMptAlibiAveraging) {
    ModelConfig c{.family = ModelFamily::Mpt};
    c.vocab_size = 3;
    c.hidden = 4;
    c.n_layer = 1;
    c.n_head = 2;
    c.n_kv_head = 2;
    c.head_dim = 2;
    c.ffn_hidden = 8;
    c.no_bias = true;
    const std::vector<float> embedding = {0.5f,  -1.0f, 2.0f,  0.25f,  //
                                          1.5f,  1.0f,  -0.5f, 0.0f,   //
                                          -2.0f, 0.75f, 0.5f,  1.0f};
    std::vector<float> wqkv(12 * 4, 0.0f);
    std::vector<float> identity(16, 0.0f);
    for (std::size_t i = 0; i < 4; ++i) {
        wqkv[(8 + i) * 4 + i] = 1.0f;  // v rows: 8..11
        identity[i * 4 + i] = 1.0f;
    }
    const std::vector<float> ones(4, 1.0f);
    const TensorMap tensors = {
        {"transformer.wte.weight", {{3, 4}, embedding}},
        {"transformer.blocks.0.norm_1.weight", {{4}, ones}},
        {"transformer.blocks.0.attn.Wqkv.weight", {{12, 4}, wqkv}},
        {"transformer.blocks.0.attn.out_proj.weight", {{4, 4}, identity}},
        {"transformer.blocks.0.norm_2.weight", {{4}, ones}},
        {"transformer.blocks.0.ffn.up_proj.weight", {{8, 4}, std::vector<float>(32, 0.0f)}},
        {"transformer.blocks.0.ffn.down_proj.weight", {{4, 8}, std::vector<float>(32, 0.0f)}},
        {"transformer.norm_f.weight", {{4}, ones}},
    };
    fs::create_directories(dir_.path() / "mpt");
    write_f32_safetensors(dir_.path() / "mpt" / "model.safetensors", tensors);
    const auto checkpoint = vkf::open_checkpoint(dir_.path() / "mpt");
    const Model model(c, checkpoint);
    const std::vector<std::uint32_t> ids = {1, 2, 0, 2};
    const std::vector<double> logits = model.forward(ids);
    ASSERT_EQ(logits.size(), 12u);
    const double slopes[2] = {1.0 / 16.0, 1.0 / 256.0};
    std::vector<std::vector<double>> normed;
    for (std::uint32_t id : ids) {
        normed.push_back(
            plain_layer_norm({embedding[id * 4], embedding[id * 4 + 1], embedding[id * 4 + 2], embedding[id * 4 + 3]},
                             c.layer_norm_epsilon));
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
        std::vector<double> x(4);
        for (std::size_t ch = 0; ch < 4; ++ch) {
            x[ch] = embedding[ids[i] * 4 + ch];
        }
        for (std::size_t head = 0; head < 2; ++head) {
            double total = 0.0;
            for (std::size_t j = 0; j <= i; ++j) {
                total += std::exp(-slopes[head] * static_cast<double>(i - j));
            }
            for (std::size_t j = 0; j <= i; ++j) {
                const double p = std::exp(-slopes[head] * static_cast<double>(i - j)) / total;
                for (std::size_t e = 0; e < 2; ++e) {
                    x[head * 2 + e] += p * normed[j][head * 2 + e];
                }
            }
        }
        x = plain_layer_norm(x, c.layer_norm_epsilon);
        for (std::size_t v = 0; v < 3; ++v) {
            double want = 0.0;
            for (std::size_t ch = 0; ch < 4; ++ch) {
                want += x[ch] * embedding[v * 4 + ch];
            }
            EXPECT_NEAR(logits[i * 3 + v], want, 1e-14) << "token " << i << ", vocab " << v;
        }
    }
}

}  // namespace
