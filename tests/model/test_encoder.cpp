// JinaBERT encoders on the device (host/model/encoder.hpp) against the double-precision CPU
// reference (host/reference/encoder.hpp): seeded random checkpoints written with the family's
// real tensor names (with and without the "bert." prefix), non-power-of-two head counts (3, 5,
// 6) and head sizes 32, 64 and 80, odd sequence lengths, fp32, fp16 and q8_0 weights. Token
// states and the mean and CLS embeddings (plain and L2-normalized) are compared, every
// activation buffer poisoned before each run.

#include "host/model/encoder.hpp"
#include "host/reference/encoder.hpp"
#include "host/reference/pooling.hpp"
#include "host/spec/encoder_checkpoint.hpp"
#include "host/util/compare.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace vkf::test {
namespace {

// fp32 weights and activations against double; also fp16 and quantized weights against a
// reference reading the same rounded weights (the kernels' own error).
constexpr double kTolerance = 2e-5;
// fp16 weights against the reference on the original fp32 weights (the storage's error).
constexpr double kF16StorageTolerance = 2e-3;

EncoderConfig jina_config(std::uint32_t hidden, std::uint32_t heads, std::uint32_t intermediate, std::uint32_t layers) {
    return EncoderConfig{.vocab_size = 211,  // prime
                         .hidden = hidden,
                         .n_layer = layers,
                         .n_head = heads,
                         .head_dim = hidden / heads,
                         .intermediate = intermediate,
                         .type_vocab_size = 2,
                         .max_position_embeddings = 64,
                         .layer_norm_eps = 1e-12};
}

struct Case {
    const char* name;
    EncoderConfig config;
    DType dtype = DType::F32;  // the checkpoint's
    WeightFormat format = {.dense = DType::F32};
    std::vector<std::uint32_t> lengths = {1, 7, 33, 130};
    bool bert_prefix = false;
};

class Encoder_ : public VulkanTest {};

double check(const char* what, std::span<const float> gpu, std::span<const double> ref, double tolerance) {
    const ErrorStats e = compare_to_reference(gpu, ref);
    EXPECT_LT(e.max_rel, tolerance) << what << ": " << describe(e);
    return e.max_rel;
}

// Largest relative error of the token states and of the embeddings over every length.
double check_case(Context& ctx, const Case& c) {
    SCOPED_TRACE(c.name);
    TempDir dir("vkf_test_encoder");
    write_random_encoder_checkpoint(dir.path(), c.config,
                                    {.seed = 5, .dtype = c.dtype, .shards = 1, .bert_prefix = c.bert_prefix});
    Encoder encoder(ctx, dir.path(), {.weights = c.format});
    EXPECT_EQ(encoder.config(), c.config);
    const bool rounded = c.format.dense == DType::F16;
    const reference::Encoder ref(
        c.config, encoder.checkpoint(),
        {.round_weights_to_f16 = rounded && c.format.quant == QuantFormat::None, .quantize = c.format.quant});
    const std::uint32_t h = c.config.hidden;
    double worst = 0.0;
    for (const std::uint32_t len : c.lengths) {
        SCOPED_TRACE("tokens " + std::to_string(len));
        const std::vector<std::uint32_t> ids = random_token_ids(len, c.config.vocab_size, len);
        const std::vector<double> states = ref.forward(ids);
        const std::vector<float> gpu = encoder.encode(ids, {.pooling = Pooling::None, .poison = true});
        EXPECT_EQ(gpu.size(), std::size_t{len} * h) << "token states";
        if (gpu.size() != std::size_t{len} * h) {
            return INFINITY;
        }
        worst = std::max(worst, check("token states", gpu, states, kTolerance));
        for (const Pooling p : {Pooling::Mean, Pooling::Cls}) {
            for (const bool normalize : {false, true}) {
                const std::vector<float> e =
                    encoder.encode(ids, {.pooling = p, .normalize = normalize, .poison = true});
                EXPECT_EQ(e.size(), h);
                const std::string what = std::string(pooling_name(p)) + (normalize ? " normalized" : "");
                worst =
                    std::max(worst, check(what.c_str(), e, reference::pool(states, len, h, p, normalize), kTolerance));
            }
        }
        if (rounded && c.format.quant == QuantFormat::None && c.dtype == DType::F32) {
            const reference::Encoder original(c.config, encoder.checkpoint());
            const double storage =
                check("states against the unrounded weights", gpu, original.forward(ids), kF16StorageTolerance);
            std::printf("%s, %u tokens: relative error %.3g against the fp32 weights\n", c.name, len, storage);
        }
    }
    std::printf("%s: largest relative error %.3g\n", c.name, worst);
    return worst;
}

TEST_F(Encoder_, ThreeHeadsOf32MatchTheReference) {
    check_case(ctx(), {.name = "3 heads of 32, f32", .config = jina_config(96, 3, 128, 2)});
    check_case(ctx(), {.name = "3 heads of 32, f16 weights from an f32 checkpoint",
                       .config = jina_config(96, 3, 128, 2),
                       .format = {.dense = DType::F16}});
}

TEST_F(Encoder_, FiveHeadsOf64MatchTheReference) {
    check_case(ctx(), {.name = "5 heads of 64, f16 checkpoint, bert. prefix",
                       .config = jina_config(320, 5, 192, 1),
                       .dtype = DType::F16,
                       .format = {.dense = DType::F16},
                       .lengths = {7, 130},
                       .bert_prefix = true});
}

TEST_F(Encoder_, SixHeadsOf80MatchTheReference) {
    check_case(ctx(), {.name = "6 heads of 80, f32", .config = jina_config(480, 6, 160, 1), .lengths = {1, 33}});
}

TEST_F(Encoder_, QuantizedWeightsMatchTheReference) {
    check_case(ctx(), {.name = "3 heads of 32, q8_0",
                       .config = jina_config(96, 3, 128, 2),
                       .format = {.dense = DType::F16, .quant = QuantFormat::Q8_0},
                       .lengths = {7, 33}});
}

// An fp16 checkpoint loads as fp16 by default, an fp32 one as fp32.
TEST_F(Encoder_, DefaultWeightFormatFollowsTheCheckpoint) {
    for (const DType dtype : {DType::F32, DType::F16}) {
        TempDir dir("vkf_test_encoder");
        write_random_encoder_checkpoint(dir.path(), jina_config(96, 3, 128, 1), {.dtype = dtype});
        const Encoder encoder(ctx(), dir.path());
        EXPECT_EQ(encoder.weight_format(), WeightFormat{.dense = dtype});
    }
}

// Without positions a bidirectional encoder is permutation-equivariant: permuted ids would give
// permuted states and the same mean. The ALiBi bias is what tells them apart. Reversing keeps
// every |i - j| and so the mean (checked: the bias is symmetric); rotating by one token does
// not, and must change the mean by far more than the tolerance (7.6e-4 measured, small
// because random weights give small attention logits).
TEST_F(Encoder_, PositionsMatter) {
    TempDir dir("vkf_test_encoder");
    const EncoderConfig config = jina_config(96, 3, 128, 2);
    write_random_encoder_checkpoint(dir.path(), config, {.dtype = DType::F32});
    Encoder encoder(ctx(), dir.path());
    std::vector<std::uint32_t> ids = random_token_ids(17, config.vocab_size, 3);
    const std::vector<float> original = encoder.encode(ids);
    const std::vector<double> original_wide(original.begin(), original.end());
    std::vector<std::uint32_t> reversed(ids.rbegin(), ids.rend());
    const ErrorStats same = compare_to_reference(encoder.encode(reversed), original_wide);
    EXPECT_LT(same.max_rel, kTolerance) << "reversed: " << describe(same);
    std::rotate(ids.begin(), ids.begin() + 1, ids.end());
    const ErrorStats moved = compare_to_reference(encoder.encode(ids), original_wide);
    EXPECT_GT(moved.max_rel, 10 * kTolerance) << "rotated: " << describe(moved);
}

TEST_F(Encoder_, RefusesBadInputs) {
    TempDir dir("vkf_test_encoder");
    const EncoderConfig config = jina_config(96, 3, 128, 1);
    write_random_encoder_checkpoint(dir.path(), config, {.dtype = DType::F32});
    Encoder encoder(ctx(), dir.path());
    const std::vector<std::uint32_t> bad = {1, 2, 211};
    EXPECT_NE(error_message([&] { encoder.encode(bad); }).find("token id 211 at input position 2"), std::string::npos);
    EXPECT_NE(error_message([&] { encoder.encode({}); }).find("at least one token"), std::string::npos);
    const std::vector<std::uint32_t> ok = {1, 2};
    EXPECT_NE(
        error_message([&] { encoder.encode(ok, {.pooling = Pooling::None, .normalize = true}); }).find("normalize"),
        std::string::npos);
}

// A head size the attention kernels do not run is refused at load, naming it.
TEST_F(Encoder_, RefusesUnsupportedHeadSize) {
    TempDir dir("vkf_test_encoder");
    write_random_encoder_checkpoint(dir.path(), jina_config(63, 3, 64, 1), {.dtype = DType::F32});
    EXPECT_NE(error_message([&] { Encoder encoder(ctx(), dir.path()); }).find("head_dim 21"), std::string::npos);
}

}  // namespace
}  // namespace vkf::test
