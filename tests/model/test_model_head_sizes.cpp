// Whole BLOOM and MPT models whose head size is off the attention kernels' tuned table, against
// the double-precision CPU reference model: 112 (MPT-30B's) and two sizes that share no factor
// of 4 with the lanes, 40 with 7 heads and 18 with 5 (a 4n + 2 size, whose rows do not start
// on a quad), through the fused QKV projection (the SCATTER epilogue writes K and V into the
// cache) and the separate repack and append passes, with fp32 and fp16 KV caches. Logits of
// the prefill (every position) and of a few greedy decode steps are compared.

#include "host/model/session.hpp"
#include "host/reference/model.hpp"
#include "host/spec/random_weights.hpp"
#include "host/util/compare.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace vkf::test {
namespace {

// fp32 weights and KV cache against double (test_model.cpp's bound).
constexpr double kTolerance = 2e-5;

ModelConfig config(ModelFamily family, std::uint32_t n_head, std::uint32_t head_dim) {
    const std::uint32_t hidden = n_head * head_dim;
    return ModelConfig{.family = family,
                       .vocab_size = 211,
                       .hidden = hidden,
                       .n_layer = 2,
                       .n_head = n_head,
                       .n_kv_head = n_head,
                       .head_dim = head_dim,
                       .ffn_hidden = 4 * hidden};
}

std::uint32_t argmax(std::span<const float> row) {
    return static_cast<std::uint32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

struct Case {
    ModelConfig config;
    DType dtype;  // the checkpoint's weights
    DType kv_dtype;
    bool fuse_qkv;
};

std::string name(const Case& c) {
    return std::string(family_name(c.config.family)) + " " + std::to_string(c.config.n_head) + " heads of " +
           std::to_string(c.config.head_dim) + ", weights " + to_string(c.dtype) + ", kv " + to_string(c.kv_dtype) +
           (c.fuse_qkv ? ", fused qkv" : ", unfused");
}

// Prefill of an 11-token prompt, then 4 greedy decode steps through the cache; returns the
// largest relative error of a logits row.
double check_against_reference(Context& ctx, const Case& c) {
    SCOPED_TRACE(name(c));
    TempDir dir("vkf_test_head_sizes");
    write_random_checkpoint(dir.path(), c.config, 17, c.dtype, 1);
    const Model model(ctx, dir.path());
    const bool f16 = c.dtype == DType::F16;

    constexpr std::uint32_t kPrompt = 11, kSteps = 4;
    const std::uint32_t vocab = c.config.vocab_size;
    std::vector<std::uint32_t> ids = random_token_ids(kPrompt, vocab, 23);
    Session session(model, SessionOptions{.max_tokens = kPrompt + kSteps,
                                          .fuse_qkv = c.fuse_qkv,
                                          .fuse_layernorm = c.fuse_qkv,
                                          .kv_dtype = c.kv_dtype});
    // The QKV scatter binds 7 storage buffers: devices that allow fewer (Vulkan's minimum of 4,
    // VKF_LIMITS=spec_minimum) take the separate passes.
    EXPECT_EQ(
        session.fused_qkv(),
        c.fuse_qkv && plan_matmul(matmul_device(ctx), 1, 96, 32, DType::F32, MatmulOptions{.scatter = true}).scatter);
    std::vector<float> gpu = session.forward(ids, Session::Logits::All);
    if (gpu.size() != std::size_t{kPrompt} * vocab) {
        ADD_FAILURE() << "prefill gave " << gpu.size() << " logits";
        return INFINITY;
    }
    for (std::uint32_t s = 0; s < kSteps; ++s) {
        ids.push_back(argmax(std::span(gpu).last(vocab)));
        const std::uint32_t one[] = {ids.back()};
        const std::vector<float> row = session.forward(one);
        if (row.size() != vocab) {
            ADD_FAILURE() << "decode step " << s << " gave " << row.size() << " logits";
            return INFINITY;
        }
        gpu.insert(gpu.end(), row.begin(), row.end());
    }

    const reference::Model reference(model.config(), model.checkpoint(),
                                     reference::ModelOptions{.round_weights_to_f16 = f16});
    const std::vector<double> ref = reference.forward(ids);
    if (ref.size() != gpu.size()) {
        ADD_FAILURE() << "the reference gave " << ref.size() << " logits";
        return INFINITY;
    }
    // The reference keeps K and V in double: an fp16 cache is held to the fp16 storage bound.
    const double tol = c.kv_dtype == DType::F16 ? tolerance(DType::F16) : kTolerance;
    double worst = 0.0;
    for (std::uint32_t t = 0; t < kPrompt + kSteps; ++t) {
        const ErrorStats e = compare_to_reference(std::span(gpu).subspan(std::size_t{t} * vocab, vocab),
                                                  std::span(ref).subspan(std::size_t{t} * vocab, vocab));
        EXPECT_EQ(e.first_nonfinite, SIZE_MAX) << "position " << t;
        EXPECT_LT(e.max_rel, tol) << (t < kPrompt ? "prefill position " : "decode step ")
                                  << (t < kPrompt ? t : t - kPrompt) << ": " << describe(e);
        worst = std::max(worst, e.max_rel);
    }
    std::printf("%s: largest relative logit error %.3g\n", name(c).c_str(), worst);
    return worst;
}

class ModelHeadSizes : public VulkanTest {};

// MPT-30B's head size, 112 (7 x 16: no tuned size), with 3 heads.
TEST_F(ModelHeadSizes, HeadSize112MatchesTheReference) {
    for (const ModelFamily family : {ModelFamily::Mpt, ModelFamily::Bloom}) {
        const ModelConfig c = config(family, 3, 112);
        check_against_reference(ctx(), {c, DType::F32, DType::F32, true});
        check_against_reference(ctx(), {c, DType::F32, DType::F16, false});
        check_against_reference(ctx(), {c, DType::F16, DType::F16, true});
        check_against_reference(ctx(), {c, DType::F16, DType::F32, false});
    }
}

// 40 (20 pairs: no row of 8 lanes splits them evenly) with 7 heads, and 18 (4n + 2) with 5.
TEST_F(ModelHeadSizes, HeadSizes40And18MatchTheReference) {
    for (const ModelFamily family : {ModelFamily::Mpt, ModelFamily::Bloom}) {
        const ModelConfig c40 = config(family, 7, 40);
        check_against_reference(ctx(), {c40, DType::F32, DType::F32, true});
        check_against_reference(ctx(), {c40, DType::F16, DType::F16, false});
        const ModelConfig c18 = config(family, 5, 18);
        check_against_reference(ctx(), {c18, DType::F32, DType::F16, true});
        check_against_reference(ctx(), {c18, DType::F32, DType::F32, false});
    }
}

// An odd head size cannot be stored as fp16 pairs: the model is refused before any upload,
// with the size named.
TEST_F(ModelHeadSizes, OddHeadSizesAreRefused) {
    const Case c{config(ModelFamily::Mpt, 3, 21), DType::F32, DType::F32, true};
    TempDir dir("vkf_test_head_sizes");
    write_random_checkpoint(dir.path(), c.config, 17, c.dtype, 1);
    try {
        const Model model(ctx(), dir.path());
        FAIL() << "head size 21 was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("head_dim 21"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("even head sizes 2..256"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace vkf::test
