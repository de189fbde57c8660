// vkformer's dequantization of the types it reads as stored (host/quant/kquant_format.hpp:
// the K-quants and Q4_1, Q5_0, Q5_1) against ggml's own: the
// to_float of ggml_get_type_traits in llama.cpp's prebuilt libggml-base.so, loaded from the
// path in VKF_GGML_LIB (tests/quant/ggml_reference.py installs the npm package that carries
// it). Every weight must have the same bits, on random super-blocks (any bytes, finite fp16
// super-block scales) and on blocks ggml's own reference quantizer made from random floats.

#include "host/quant/kquant_format.hpp"
#include "host/util/half.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace vkf {
namespace {

// ggml.h's struct ggml_type_traits, as the library lays it out (its ABI, version 0.5).
using ToFloat = void (*)(const void* x, float* y, std::int64_t k);
using FromFloat = void (*)(const float* x, void* y, std::int64_t k);
struct GgmlTypeTraitsAbi {
    const char* type_name;
    std::int64_t blck_size;
    std::int64_t blck_size_interleave;
    std::size_t type_size;
    bool is_quantized;
    ToFloat to_float;
    FromFloat from_float_ref;
};
using GetTypeTraits = const GgmlTypeTraitsAbi* (*)(int type);

class Ggml {
public:
    explicit Ggml(const char* path) : handle_(dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
        if (handle_ != nullptr) {
            traits_ = reinterpret_cast<GetTypeTraits>(dlsym(handle_, "ggml_get_type_traits"));
        }
    }
    ~Ggml() {
        if (handle_ != nullptr) {
            dlclose(handle_);
        }
    }
    Ggml(const Ggml&) = delete;
    Ggml& operator=(const Ggml&) = delete;
    const GgmlTypeTraitsAbi* traits(GgmlType type) const { return traits_(static_cast<int>(type)); }
    bool loaded() const { return traits_ != nullptr; }

private:
    void* handle_;
    GetTypeTraits traits_ = nullptr;
};

const Ggml& ggml() {
    static const Ggml library(std::getenv("VKF_GGML_LIB") != nullptr ? std::getenv("VKF_GGML_LIB") : "");
    return library;
}

class KQuantGgml : public ::testing::TestWithParam<GgmlType> {
protected:
    void SetUp() override {
        if (std::getenv("VKF_GGML_LIB") == nullptr) {
            GTEST_SKIP() << "VKF_GGML_LIB names no libggml-base.so (ggml_reference.py sets it)";
        }
        ASSERT_TRUE(ggml().loaded()) << "cannot load ggml_get_type_traits from " << std::getenv("VKF_GGML_LIB") << ": "
                                     << dlerror();
        const GgmlTypeTraitsAbi* t = ggml().traits(GetParam());
        ASSERT_EQ(t->blck_size, kquant_block_weights(GetParam()));
        ASSERT_EQ(t->type_size, kquant_block_bytes(GetParam()));
        ASSERT_EQ(std::string(t->type_name), "q" + std::string(ggml_type_name(GetParam())).substr(1));
    }

    // Both dequantizations of `blocks` (a row of whole super-blocks), compared bit for bit.
    void expect_same(const std::vector<std::uint8_t>& blocks, const char* what) {
        const std::size_t n = blocks.size() / kquant_block_bytes(GetParam()) * kquant_block_weights(GetParam());
        std::vector<float> ours(n), theirs(n);
        dequantize_kquant_row(GetParam(), blocks, ours);
        ggml().traits(GetParam())->to_float(blocks.data(), theirs.data(), static_cast<std::int64_t>(n));
        std::size_t differing = 0;
        for (std::size_t i = 0; i < n; ++i) {
            std::uint32_t a = 0, b = 0;
            std::memcpy(&a, &ours[i], 4);
            std::memcpy(&b, &theirs[i], 4);
            if (a != b && ++differing <= 5) {
                ADD_FAILURE() << what << ": weight " << i << " (block " << i / kquant_block_weights(GetParam())
                              << ") is " << ours[i] << " here, " << theirs[i] << " in ggml";
            }
        }
        EXPECT_EQ(differing, 0u) << what;
    }
};

// Where the fp16 super-block scales lie in each block.
std::vector<std::size_t> half_offsets(GgmlType type) {
    switch (type) {
        case GgmlType::Q2_K:
            return {80, 82};
        case GgmlType::Q3_K:
            return {108};
        case GgmlType::Q6_K:
            return {208};
        case GgmlType::Q5_0:
            return {0};
        default:  // Q4_K, Q5_K; Q4_1 and Q5_1's d and m
            return {0, 2};
    }
}

TEST_P(KQuantGgml, RandomBlocksDequantizeAsGgml) {
    std::mt19937 rng(20261129u + static_cast<unsigned>(GetParam()));
    const std::uint32_t block = kquant_block_bytes(GetParam());
    constexpr std::size_t kBlocks = 512;
    std::vector<std::uint8_t> blocks(kBlocks * block);
    for (std::uint8_t& byte : blocks) {
        byte = static_cast<std::uint8_t>(rng());
    }
    std::normal_distribution<float> scale(0.0f, 0.05f);
    for (std::size_t b = 0; b < kBlocks; ++b) {
        for (const std::size_t offset : half_offsets(GetParam())) {
            // Finite scales (random bits could be NaN, whose payload is not the point), some
            // of them subnormal, zero or negative.
            const float value = b % 17 == 0 ? 0.0f : b % 13 == 0 ? scale(rng) * 1e-6f : scale(rng);
            const std::uint16_t bits = float_to_half(value);
            blocks[b * block + offset] = static_cast<std::uint8_t>(bits & 0xFF);
            blocks[b * block + offset + 1] = static_cast<std::uint8_t>(bits >> 8);
        }
    }
    expect_same(blocks, "random super-blocks");
}

TEST_P(KQuantGgml, GgmlQuantizedBlocksDequantizeAsGgml) {
    std::mt19937 rng(7u + static_cast<unsigned>(GetParam()));
    std::normal_distribution<float> weight(0.0f, 0.02f);
    constexpr std::size_t kWeights = 64 * kKQuantBlock;
    const std::uint32_t block_weights = kquant_block_weights(GetParam());
    std::vector<float> x(kWeights);
    for (std::size_t i = 0; i < kWeights; ++i) {
        // Some blocks all positive, some with an outlier: the mins and scales vary.
        x[i] = weight(rng) + (i / block_weights % 3 == 1 ? 0.05f : 0.0f) + (i % 997 == 0 ? 0.5f : 0.0f);
    }
    std::vector<std::uint8_t> blocks(kWeights / block_weights * kquant_block_bytes(GetParam()));
    ggml().traits(GetParam())->from_float_ref(x.data(), blocks.data(), static_cast<std::int64_t>(kWeights));
    expect_same(blocks, "ggml-quantized super-blocks");
}

INSTANTIATE_TEST_SUITE_P(Types, KQuantGgml,
                         ::testing::Values(GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                                           GgmlType::Q6_K, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1),
                         [](const auto& p) { return std::string(ggml_type_name(p.param)); });

}  // namespace
}  // namespace vkf
