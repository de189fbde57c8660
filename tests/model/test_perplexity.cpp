// Perplexity on the device (host/model/perplexity.hpp) against the definition evaluated on
// logits that are known: a BLOOM whose final LayerNorm has zero weights, so every position's
// hidden state is ln_f.bias and the logits are word_embeddings . ln_f.bias, whatever the text;
// and against the double-precision CPU reference model, window by window, on random weights.

#include "host/io/safetensors.hpp"
#include "host/io/safetensors_writer.hpp"
#include "host/io/text_file.hpp"
#include "host/model/generation.hpp"
#include "host/model/perplexity.hpp"
#include "host/model/session.hpp"
#include "host/reference/model.hpp"
#include "host/spec/model_config.hpp"
#include "host/spec/random_weights.hpp"
#include "host/text/tokenizer.hpp"
#include "tests/support/small_models.hpp"
#include "tests/support/vulkan_test.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

namespace vkf::test {
namespace {

class Perplexity_ : public VulkanTest {};

// Rewrites DIR/model.safetensors (F32, one file) with `replace` applied to some tensors.
void rewrite_checkpoint(const std::filesystem::path& dir,
                        const std::function<void(const std::string&, std::vector<float>&)>& replace) {
    const std::filesystem::path path = dir / "model.safetensors";
    std::vector<RawTensorSource> sources;
    {
        const SafetensorsFile file = open_safetensors(path);
        for (const TensorInfo& info : file.tensors()) {
            std::vector<float> values = file.read_as_f32(info);
            replace(info.name, values);
            sources.push_back(
                {.name = info.name,
                 .dtype = DType::F32,
                 .shape = info.shape,
                 .bytes = [values](std::span<std::byte> out) { std::memcpy(out.data(), values.data(), out.size()); }});
        }
    }
    write_safetensors_file(path, sources, {});
}

TEST_F(Perplexity_, KnownLogitsGiveTheHandComputedValue) {
    const ModelConfig config = small_bloom();
    const TempDir dir("vkf_test_ppl_known");
    write_random_checkpoint(dir.path(), config, 3, DType::F32, 1);
    std::vector<float> embeddings, bias;
    rewrite_checkpoint(dir.path(), [&](const std::string& name, std::vector<float>& values) {
        if (name.ends_with("ln_f.weight")) {
            std::fill(values.begin(), values.end(), 0.0f);
        } else if (name.ends_with("ln_f.bias")) {
            for (std::size_t i = 0; i < values.size(); ++i) {
                values[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i))) * 20.0f;
            }
            bias = values;
        } else if (name.ends_with("word_embeddings.weight")) {
            embeddings = values;
        }
    });
    // logits[v] = sum_h E[v, h] b[h] at every position: the NLL of token t is the same
    // log-sum-exp minus logits[t] wherever it occurs.
    const std::uint32_t vocab = config.vocab_size, hidden = config.hidden;
    std::vector<double> logits(vocab);
    for (std::uint32_t v = 0; v < vocab; ++v) {
        for (std::uint32_t h = 0; h < hidden; ++h) {
            logits[v] += double{embeddings[std::size_t{v} * hidden + h]} * bias[h];
        }
    }
    double top = logits[0];
    for (const double l : logits) {
        top = std::max(top, l);
    }
    double sum = 0.0;
    for (const double l : logits) {
        sum += std::exp(l - top);
    }
    const double log_sum = top + std::log(sum);

    const Model model(ctx(), dir.path(), ModelOptions{.weights = WeightFormat{.dense = DType::F32}});
    const std::vector<std::uint32_t> ids = random_token_ids(100, vocab, 5);
    for (const std::uint32_t c : {16u, 23u}) {
        SCOPED_TRACE(c);
        const PerplexityWindows w = perplexity_windows(ids.size(), c);
        double nll = 0.0;
        for (std::size_t i = 0; i < w.windows; ++i) {
            for (std::uint32_t j = w.first; j + 1 < c; ++j) {
                nll += log_sum - logits[ids[w.begin(i) + j + 1]];
            }
        }
        const double expected = std::exp(nll / static_cast<double>(w.scored_tokens()));
        const PerplexityResult r = perplexity(model, ids, c, PerplexityOptions{.chunk = 5, .kv_dtype = DType::F32});
        EXPECT_EQ(r.sum.tokens, w.scored_tokens());
        EXPECT_NEAR(r.perplexity() / expected, 1.0, 1e-5) << r.perplexity() << " against " << expected;
        EXPECT_GT(expected, 1.5) << "the logits are far from uniform, so the check has teeth";
    }
}

TEST_F(Perplexity_, MatchesTheReferenceModelWindowByWindow) {
    const ModelConfig config = small_bloom();
    const TempDir dir("vkf_test_ppl_ref");
    write_random_checkpoint(dir.path(), config, 9, DType::F32, 1);
    const Model model(ctx(), dir.path(), ModelOptions{.weights = WeightFormat{.dense = DType::F32}});
    const reference::Model ref(model.config(), model.checkpoint());
    const std::vector<std::uint32_t> ids = random_token_ids(61, config.vocab_size, 8);  // prime length
    for (const std::uint32_t c : {19u, 30u}) {
        SCOPED_TRACE(c);
        const PerplexityWindows w = perplexity_windows(ids.size(), c);
        NllSum expected;
        for (std::size_t i = 0; i < w.windows; ++i) {
            const std::span<const std::uint32_t> window = std::span(ids).subspan(w.begin(i), c);
            const std::vector<double> logits = ref.forward(window);
            for (std::uint32_t j = w.first; j + 1 < c; ++j) {
                expected.add(token_nll(std::span(logits).subspan(std::size_t{j} * config.vocab_size, config.vocab_size),
                                       window[j + 1]));
            }
        }
        std::size_t reported = 0;
        const PerplexityResult r = perplexity(
            model, ids, c,
            PerplexityOptions{.chunk = 7, .kv_dtype = DType::F32, .progress = [&](std::size_t done, std::size_t all) {
                                  EXPECT_EQ(all, w.windows);
                                  reported = done;
                              }});
        EXPECT_EQ(reported, w.windows);
        EXPECT_EQ(r.sum.tokens, expected.tokens);
        EXPECT_NEAR(r.sum.mean(), expected.mean(), 1e-5 * expected.mean());
        // max_windows scores a prefix of the windows.
        const PerplexityResult one =
            perplexity(model, ids, c, PerplexityOptions{.kv_dtype = DType::F32, .max_windows = 1});
        EXPECT_EQ(one.sum.tokens, w.scored_per_window());
    }
    EXPECT_THROW(perplexity(model, ids, 62), Error) << "longer than the text";
}

// The model the project ships, on the start of its held-out text, window by window against
// the double-precision reference on the same fp16 weights.
TEST_F(Perplexity_, ShippedModelMatchesTheReferenceOnHeldOutText) {
    const std::filesystem::path dir = std::filesystem::path(VKF_SOURCE_DIR) / "models" / "kjv-bloom";
    const std::vector<std::uint32_t> ids = text::Tokenizer::load(dir / "tokenizer.json")
                                               .encode(read_text_file(dir / "heldout.txt").substr(0, 2000), false);
    const Model model(ctx(), dir);
    ASSERT_EQ(model.weight_format().dense, DType::F16);
    const reference::Model ref(model.config(), model.checkpoint(),
                               reference::ModelOptions{.round_weights_to_f16 = true});
    constexpr std::uint32_t kCtx = 96;
    const PerplexityWindows w = perplexity_windows(ids.size(), kCtx);
    ASSERT_GE(w.windows, 3u);
    NllSum expected;
    for (std::size_t i = 0; i < w.windows; ++i) {
        const std::span<const std::uint32_t> window = std::span(ids).subspan(w.begin(i), kCtx);
        const std::vector<double> logits = ref.forward(window);
        const std::size_t vocab = model.config().vocab_size;
        for (std::uint32_t j = w.first; j + 1 < kCtx; ++j) {
            expected.add(token_nll(std::span(logits).subspan(j * vocab, vocab), window[j + 1]));
        }
    }
    const PerplexityResult r = perplexity(model, ids, kCtx, PerplexityOptions{.kv_dtype = DType::F32});
    EXPECT_EQ(r.sum.tokens, expected.tokens);
    EXPECT_NEAR(r.perplexity() / expected.perplexity(), 1.0, 1e-5)
        << r.perplexity() << " against " << expected.perplexity();
    EXPECT_LT(expected.perplexity(), 200.0) << "a trained model, far from the vocabulary's 4096";
}

// The shipped model over quantized K/V caches: its perplexity on the held-out text within
// the bounds of the fp16 cache's (q8_0 0.5%, q4_0 3%; measured figures in
// docs/QUANTIZATION.md), and greedy text from a short prompt with q8_0 K/V equal to fp16's.
// The quantized cache goes through the separate append passes, so this also runs KV append's
// quantization, the paged pool and attention's KV_QUANT variants in a whole model.
TEST_F(Perplexity_, ShippedModelKeepsItsPerplexityOverQuantizedKv) {
    const std::filesystem::path dir = std::filesystem::path(VKF_SOURCE_DIR) / "models" / "kjv-bloom";
    const text::Tokenizer tokenizer = text::Tokenizer::load(dir / "tokenizer.json");
    const std::vector<std::uint32_t> ids = tokenizer.encode(read_text_file(dir / "heldout.txt").substr(0, 3000), false);
    const Model model(ctx(), dir);
    constexpr std::uint32_t kCtx = 128;  // the training length
    const auto ppl = [&](QuantFormat k, QuantFormat v) {
        return perplexity(model, ids, kCtx, PerplexityOptions{.kv_k_quant = k, .kv_v_quant = v}).perplexity();
    };
    const double f16 = ppl(QuantFormat::None, QuantFormat::None);
    const double q8 = ppl(QuantFormat::Q8_0, QuantFormat::Q8_0);
    const double q4 = ppl(QuantFormat::Q4_0, QuantFormat::Q4_0);
    std::printf("perplexity at %u: f16 K/V %.4f, q8_0 %.4f (%+.3f%%), q4_0 %.4f (%+.3f%%)\n", kCtx, f16, q8,
                100 * (q8 / f16 - 1), q4, 100 * (q4 / f16 - 1));
    EXPECT_LT(std::fabs(q8 / f16 - 1), 0.005);
    EXPECT_LT(std::fabs(q4 / f16 - 1), 0.03);
    EXPECT_NE(q4, f16) << "a 4-bit cache that changes nothing was not used";

    const std::vector<std::uint32_t> prompt = tokenizer.encode("And God said, Let there be", false);
    const auto greedy = [&](QuantFormat q) {
        Session session(model, SessionOptions{.max_tokens = 64, .kv_k_quant = q, .kv_v_quant = q});
        return generate(session, prompt, GenerationOptions{.n_predict = 24}).tokens;
    };
    EXPECT_EQ(greedy(QuantFormat::Q8_0), greedy(QuantFormat::None));
}

}  // namespace
}  // namespace vkf::test
