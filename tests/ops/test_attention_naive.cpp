// The naive GPU attention baseline against the double-precision CPU reference: seeded
// random inputs over odd and prime lengths, q_len != kv_len, GQA and MQA, every mask and
// ALiBi mode, slope tables and per-batch key lengths, in both storage types, with outputs
// poisoned before every run; plus its limits (the n x n scores buffer) and argument checks.

#include "host/ops/attention_naive.hpp"
#include "host/ops/device_tensor.hpp"
#include "host/quant/kv_quant.hpp"
#include "host/reference/attention.hpp"
#include "host/util/compare.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vkf::test {
namespace {

struct Case {
    AttentionShape shape;
    MaskMode mask = MaskMode::Causal;
    AlibiMode alibi = AlibiMode::Causal;
    float max_bias = 8.0f;
    std::optional<float> scale = std::nullopt;
    bool slope_table = false;
    std::vector<std::uint32_t> kv_lens = {};
};

std::string describe_case(const Case& c, DType dtype) {
    const AttentionShape& s = c.shape;
    return "batch " + std::to_string(s.batch) + " q_len " + std::to_string(s.q_len) + " kv_len " +
           std::to_string(s.kv_len) + " heads " + std::to_string(s.n_head) + "/" + std::to_string(s.n_kv_head) +
           " head_dim " + std::to_string(s.head_dim) + (c.mask == MaskMode::Causal ? " causal" : " unmasked") +
           " alibi " + std::to_string(static_cast<std::uint32_t>(c.alibi)) + (c.slope_table ? " slope table" : "") +
           (c.kv_lens.empty() ? "" : " kv_lens") + " " + to_string(dtype);
}

const std::vector<Case>& cases() {
    static const std::vector<Case> all = {
        // Square, causal BLOOM-style.
        {.shape = {1, 17, 17, 4, 4, 64}},
        // A KV cache (q_len < kv_len) with GQA.
        {.shape = {2, 5, 23, 6, 2, 32}},
        // More queries than keys: leading rows have negative positions and see no key.
        {.shape = {1, 31, 13, 2, 2, 80}, .alibi = AlibiMode::Off},
        // Encoder: no mask, symmetric ALiBi, 12 heads (not a power of two), MQA.
        {.shape = {1, 11, 11, 12, 1, 96}, .mask = MaskMode::None, .alibi = AlibiMode::Symmetric},
        // MPT-style explicit slope table, prime lengths.
        {.shape = {1, 7, 29, 3, 3, 128}, .slope_table = true},
        // Per-batch key lengths, one of them empty and one shorter than q_len.
        {.shape = {3, 4, 19, 2, 1, 256}, .kv_lens = {19, 0, 2}},
        // Decode: one query row over a key length beyond one workgroup, explicit scale.
        {.shape = {2, 1, 131, 5, 5, 64},
         .mask = MaskMode::None,
         .alibi = AlibiMode::Off,
         .scale = 0.3f,
         .kv_lens = {131, 70}},
        // Prime lengths over several workgroups per row, non-default max bias.
        {.shape = {1, 61, 61, 5, 5, 32}, .max_bias = 4.0f},
        // Symmetric ALiBi under a causal mask with a KV cache and padding.
        {.shape = {2, 9, 37, 4, 2, 64}, .alibi = AlibiMode::Symmetric, .kv_lens = {30, 37}},
        // Head sizes off the tuned table: 4n + 2 and MPT-30B's 112.
        {.shape = {1, 13, 13, 3, 3, 6}},
        {.shape = {2, 3, 21, 3, 1, 112}, .kv_lens = {21, 9}},
        {.shape = {1, 5, 11, 2, 2, 250}, .mask = MaskMode::None, .alibi = AlibiMode::Symmetric},
    };
    return all;
}

struct Inputs {
    std::vector<float> q, k, v, slopes;
};

// Random inputs; for fp16 storage already rounded to fp16, so that the reference sees
// exactly what the GPU reads.
Inputs make_inputs(const Case& c, DType dtype, std::uint64_t seed) {
    Inputs in{.q = random_uniform(q_element_count(c.shape), seed),
              .k = random_uniform(kv_element_count(c.shape), seed + 1),
              .v = random_uniform(kv_element_count(c.shape), seed + 2),
              .slopes = {}};
    for (std::vector<float>* t : {&in.q, &in.k, &in.v}) {
        *t = rounded_to(dtype, *t);
    }
    if (c.slope_table) {
        in.slopes = random_uniform(c.shape.n_head, seed + 3, 0.02f, 1.0f);
    }
    return in;
}

AttentionParams make_params(const Case& c, const Inputs& in) {
    return AttentionParams{.shape = c.shape,
                           .mask = c.mask,
                           .alibi = c.alibi,
                           .max_bias = c.max_bias,
                           .scale = c.scale,
                           .slopes = in.slopes,
                           .kv_lens = c.kv_lens};
}

// k_quant, v_quant: a quantized K and/or V (fp32 Q/O, the other side fp16); the reference
// gets the values the blocks stand for.
void check_case(Context& ctx, const Case& c, DType dtype, std::uint64_t seed, QuantFormat k_quant = QuantFormat::None,
                QuantFormat v_quant = QuantFormat::None) {
    SCOPED_TRACE(describe_case(c, dtype) + " K " + to_string(k_quant) + " V " + to_string(v_quant));
    Inputs in = make_inputs(c, dtype, seed);
    const bool quant = k_quant != QuantFormat::None || v_quant != QuantFormat::None;
    const AttentionParams params = make_params(c, in);
    const NaiveAttention op(ctx, params, dtype, std::nullopt, k_quant, v_quant);
    EXPECT_EQ(op.scores_bytes(), naive_attention_scores_bytes(c.shape));

    const std::uint32_t d = c.shape.head_dim;
    const auto store = [&](std::vector<float>& x, QuantFormat qf, const char* name) {
        if (qf == QuantFormat::None) {
            x = rounded_to(quant ? DType::F16 : dtype, x);
            return upload_tensor(ctx, x, quant ? DType::F16 : dtype, name);
        }
        const std::vector<std::uint32_t> words = kv_quantize(qf, x, c.shape.n_kv_head * d);
        x = kv_dequantize(qf, words, c.shape.n_kv_head * d);
        return upload_words(ctx, words, name);
    };
    const DeviceTensor q = upload_tensor(ctx, in.q, dtype, "Q");
    const DeviceTensor k = store(in.k, k_quant, "K");
    const DeviceTensor v = store(in.v, v_quant, "V");
    const DeviceTensor o = nan_tensor(ctx, in.q.size(), dtype, "O");

    auto list = ctx.command_list();
    op.record(*list, q.range(), k.range(), v.range(), o.range());
    ctx.submit(*list);

    const std::vector<float> out = download_tensor(ctx, o);
    const ErrorStats e = compare_to_reference(out, reference::attention(params, in.q, in.k, in.v));
    EXPECT_EQ(e.first_nonfinite, SIZE_MAX) << "unwritten or non-finite output at element " << e.first_nonfinite;
    EXPECT_LT(e.max_rel, tolerance(dtype)) << describe(e);
    EXPECT_LT(e.rel_l2, tolerance(dtype)) << describe(e);
}

class NaiveAttentionTest : public VulkanTest {};

TEST_F(NaiveAttentionTest, MatchesReferenceF32) {
    std::uint64_t seed = 100;
    for (const Case& c : cases()) {
        check_case(ctx(), c, DType::F32, seed += 10);
    }
}

// Quantized K/V caches over the cases of head sizes 32n, the formats rotating.
TEST_F(NaiveAttentionTest, MatchesReferenceOverQuantizedKv) {
    std::uint64_t seed = 300;
    const std::pair<QuantFormat, QuantFormat> formats[] = {{QuantFormat::Q8_0, QuantFormat::Q8_0},
                                                           {QuantFormat::Q4_0, QuantFormat::Q4_0},
                                                           {QuantFormat::Q8_0, QuantFormat::Q4_0},
                                                           {QuantFormat::None, QuantFormat::Q4_0}};
    std::size_t i = 0;
    for (const Case& c : cases()) {
        if (c.shape.head_dim % 32 == 0) {
            const auto [kq, vq] = formats[i++ % std::size(formats)];
            check_case(ctx(), c, DType::F32, seed += 10, kq, vq);
        }
    }
}

TEST_F(NaiveAttentionTest, MatchesReferenceF16) {
    std::uint64_t seed = 200;
    for (const Case& c : cases()) {
        check_case(ctx(), c, DType::F16, seed += 10);
    }
}

// Tiny workgroups and group counts force other workgroup sizes and the runtime's splitting
// of dispatches (vkCmdDispatchBase): the kernels must index with global workgroup ids.
TEST_F(NaiveAttentionTest, MatchesReferenceUnderSmallLimits) {
    MessageSink small_sink;
    Context small(test_options(small_sink,
                               LimitOverrides{.shared_memory = 64, .workgroup_invocations = 8, .workgroup_count = 3}));
    std::uint64_t seed = 300;
    for (const std::size_t index : {1u, 5u, 6u}) {
        check_case(small, cases()[index], DType::F32, seed += 10);
        check_case(small, cases()[index], DType::F16, seed += 10);
    }
    EXPECT_EQ(small_sink.validation_count(), 0u);
}

// Two recordings of one op in one list share its scores buffer: the second must wait for
// the first's P.V pass to finish reading it.
TEST_F(NaiveAttentionTest, TwoRecordingsInOneList) {
    const Case& c = cases()[1];
    const Inputs first = make_inputs(c, DType::F32, 400);
    const Inputs second = make_inputs(c, DType::F32, 500);
    const AttentionParams params = make_params(c, first);
    const NaiveAttention op(ctx(), params, DType::F32);

    const DeviceTensor q1 = upload_tensor(ctx(), first.q, DType::F32, "Q1");
    const DeviceTensor k1 = upload_tensor(ctx(), first.k, DType::F32, "K1");
    const DeviceTensor v1 = upload_tensor(ctx(), first.v, DType::F32, "V1");
    const DeviceTensor q2 = upload_tensor(ctx(), second.q, DType::F32, "Q2");
    const DeviceTensor k2 = upload_tensor(ctx(), second.k, DType::F32, "K2");
    const DeviceTensor v2 = upload_tensor(ctx(), second.v, DType::F32, "V2");
    const DeviceTensor o1 = nan_tensor(ctx(), first.q.size(), DType::F32, "O1");
    const DeviceTensor o2 = nan_tensor(ctx(), second.q.size(), DType::F32, "O2");

    auto list = ctx().command_list();
    op.record(*list, q1.range(), k1.range(), v1.range(), o1.range());
    op.record(*list, q2.range(), k2.range(), v2.range(), o2.range());
    ctx().submit(*list);

    for (const auto& [o, in] : {std::pair{&o1, &first}, std::pair{&o2, &second}}) {
        const std::vector<float> out = download_tensor(ctx(), *o);
        const ErrorStats e = compare_to_reference(out, reference::attention(params, in->q, in->k, in->v));
        EXPECT_LT(e.max_rel, tolerance(DType::F32)) << o->buffer().name() << ": " << describe(e);
    }
}

TEST(NaiveAttentionLimits, ReportsScoresBufferOverStorageRange) {
    ComputeLimits limits{.storage_buffer_range = 1u << 20, .storage_buffers = 8};
    const AttentionParams fits{.shape = {1, 256, 256, 4, 4, 64}};  // exactly 1 MiB of scores
    EXPECT_EQ(naive_attention_impossible(limits, fits), std::nullopt);

    const AttentionParams too_big{.shape = {1, 256, 257, 4, 4, 64}};
    const std::optional<std::string> reason = naive_attention_impossible(limits, too_big);
    ASSERT_TRUE(reason.has_value());
    EXPECT_NE(reason->find("scores buffer of 1052672 bytes"), std::string::npos) << *reason;
    EXPECT_NE(reason->find("maxStorageBufferRange 1048576"), std::string::npos) << *reason;

    // Its scores pass binds 5 storage buffers; with Vulkan's minimum of 4 its PACKED_TABLES
    // variant binds 3, the slope table and key counts (4 heads, 1 batch: 20 bytes) after the
    // scores, which then no longer fit the range.
    limits.storage_buffers = 4;
    const std::optional<std::string> packed = naive_attention_impossible(limits, fits);
    ASSERT_TRUE(packed.has_value());
    EXPECT_NE(packed->find("scores buffer of 1048596 bytes"), std::string::npos) << *packed;
    EXPECT_NE(packed->find("and the slope and key-count tables"), std::string::npos) << *packed;
    EXPECT_EQ(naive_attention_impossible(limits, AttentionParams{.shape = {1, 255, 256, 4, 4, 64}}), std::nullopt);
    limits.storage_buffers = 2;
    const std::optional<std::string> buffers = naive_attention_impossible(limits, fits);
    ASSERT_TRUE(buffers.has_value());
    EXPECT_NE(buffers->find("naive attention needs 3 storage buffers per shader stage; the device allows 2"),
              std::string::npos)
        << *buffers;
}

TEST(NaiveAttentionLimits, ScoresBytesSaturateInsteadOfOverflowing) {
    const AttentionShape huge{UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX, 1, 64};
    EXPECT_EQ(naive_attention_scores_bytes(huge), UINT64_MAX);
}

TEST_F(NaiveAttentionTest, ConstructorThrowsWhenScoresCannotBeBound) {
    // Two query rows over more keys than a quarter of the range: 8 bytes per key is too many.
    const std::uint64_t range = ctx().limits().storage_buffer_range;
    const auto kv_len = static_cast<std::uint32_t>(std::min<std::uint64_t>(range / 8 + 1, UINT32_MAX));
    const AttentionParams params{.shape = {1, 2, kv_len, 1, 1, 32}, .mask = MaskMode::None};
    try {
        NaiveAttention op(ctx(), params, DType::F32);
        FAIL() << "expected vkf::Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("maxStorageBufferRange"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("scores buffer"), std::string::npos) << e.what();
    }
}

TEST_F(NaiveAttentionTest, RejectsUnsupportedHeadDimAndInvalidParams) {
    // Odd head sizes have no fp16 pairs.
    try {
        NaiveAttention(ctx(), AttentionParams{.shape = {1, 4, 4, 2, 2, 47}}, DType::F32);
        ADD_FAILURE() << "head_dim 47 was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("head_dim 47 is not supported"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("even head sizes 2..256"), std::string::npos) << e.what();
    }
    EXPECT_THROW(NaiveAttention(ctx(), AttentionParams{.shape = {1, 4, 4, 2, 2, 258}}, DType::F32), Error);
    EXPECT_THROW(NaiveAttention(ctx(), AttentionParams{.shape = {1, 4, 4, 3, 2, 64}}, DType::F32), Error);
}

TEST_F(NaiveAttentionTest, RecordChecksTensorSizes) {
    const AttentionParams params{.shape = {1, 4, 6, 2, 2, 32}};
    const NaiveAttention op(ctx(), params, DType::F16);
    const Buffer q = ctx().create_buffer(q_element_count(params.shape) * 2, MemoryKind::Device, "Q");
    const Buffer kv = ctx().create_buffer(kv_element_count(params.shape) * 2, MemoryKind::Device, "KV");
    const Buffer wrong = ctx().create_buffer(kv_element_count(params.shape) * 4, MemoryKind::Device, "wrong");
    auto list = ctx().command_list();
    try {
        op.record(*list, whole(q), whole(kv), whole(wrong), whole(q));
        FAIL() << "expected vkf::Error";
    } catch (const Error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("V range"), std::string::npos) << message;
        EXPECT_NE(message.find("[1, 6, 2, 32]"), std::string::npos) << message;
        EXPECT_NE(message.find("f16"), std::string::npos) << message;
    }
}

}  // namespace
}  // namespace vkf::test
