// The small ops of a transformer block against the double-precision CPU reference: GELU in
// BLOOM's tanh form and MPT's erf form (and the GLSL erf behind it), residual add, embedding
// lookup (including a table bound in several ranges) and KV-cache append from dense and
// fused-QKV layouts. Seeded random inputs, odd sizes, outputs poisoned before every run.

#include "host/ops/device_tensor.hpp"
#include "host/ops/ops.hpp"
#include "host/reference/ops.hpp"
#include "host/util/compare.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <optional>

namespace vkf::test {
namespace {

// Inputs for the activations: random over [-10, 10] plus values at the edges of every branch.
std::vector<float> activation_inputs(std::size_t n, std::uint64_t seed) {
    auto x = random_uniform(n, seed, -10.0f, 10.0f);
    const float special[] = {0.0f,       -0.0f,       1e-30f,     -1e-30f,     1e-4f,       -1e-4f, 0.5f,
                             -0.5f,      1.0f,        -1.0f,      1.4142135f,  -1.4142135f, 2.5f,   -2.5f,
                             3.5355339f, -3.5355339f, 14.142135f, -14.142135f, 20.0f,       -20.0f, 100.0f,
                             -100.0f,    1e4f,        -1e4f,      1e30f,       -1e30f};
    for (std::size_t i = 0; i < std::size(special) && i < n; ++i) {
        x[i * 7 % n] = special[i];
    }
    return x;
}

class Activations_ : public VulkanTest {};

void check_activation(Context& ctx, Activation act, std::size_t n, std::uint32_t pad, bool in_place,
                      std::uint64_t seed) {
    SCOPED_TRACE(std::string(to_string(act)) + " n=" + std::to_string(n) + " pad=" + std::to_string(pad) +
                 (in_place ? " in-place" : ""));
    const auto x = activation_inputs(n, seed);
    const DeviceTensor src = upload_tensor(ctx, x, DType::F32, "src", pad);
    std::optional<DeviceTensor> dst;
    if (!in_place)
        dst = nan_tensor(ctx, n, DType::F32, "dst", pad + 2);
    const DeviceTensor& out = in_place ? src : *dst;
    auto list = ctx.command_list();
    record_activation(ctx, *list, act, src.range(), out.range());
    ctx.submit(*list);
    const auto y = download_tensor(ctx, out);
    std::vector<double> ref(n);
    double worst = 0.0;  // per element, relative to max(1, |ref|)
    for (std::size_t i = 0; i < n; ++i) {
        ref[i] = reference::activation(act, x[i]);
        worst = std::max(worst, std::abs(y[i] - ref[i]) / std::max(1.0, std::abs(ref[i])));
    }
    const ErrorStats e = compare_to_reference(y, ref);
    EXPECT_EQ(e.first_nonfinite, SIZE_MAX) << "unwritten or non-finite output at " << e.first_nonfinite;
    EXPECT_LT(e.max_rel, 1e-5) << describe(e);
    EXPECT_LT(e.rel_l2, 1e-5) << describe(e);
    EXPECT_LT(worst, 1e-6) << "largest error relative to max(1, |gelu(x)|)";
}

TEST_F(Activations_, GeluTanhAndErfMatchTheReference) {
    std::uint64_t seed = 100;
    for (Activation act : {Activation::GeluTanh, Activation::GeluErf}) {
        check_activation(ctx(), act, 100003, 0, false, seed++);
        check_activation(ctx(), act, 1, 1, false, seed++);
        check_activation(ctx(), act, 4099, 3, true, seed++);
    }
}

TEST_F(Activations_, ErfIsAccurateToAFewUlps) {
    // A dense sweep over every branch of vkf_erf (shaders/gelu.glsl), and beyond.
    const std::size_t n = 240001;
    std::vector<float> x(n);
    for (std::size_t i = 0; i < n; ++i) {
        x[i] = -12.0f + 24.0f * static_cast<float>(i) / static_cast<float>(n - 1);
    }
    const DeviceTensor src = upload_tensor(ctx(), x, DType::F32, "x");
    const DeviceTensor dst = nan_tensor(ctx(), n, DType::F32, "erf(x)");
    auto list = ctx().command_list();
    record_erf(ctx(), *list, src.range(), dst.range());
    ctx().submit(*list);
    const auto y = download_tensor(ctx(), dst);
    double worst = 0.0;
    float worst_x = 0.0f;
    for (std::size_t i = 0; i < n; ++i) {
        const double err = std::abs(y[i] - std::erf(double{x[i]}));
        if (!(err <= worst)) {
            worst = err;
            worst_x = x[i];
        }
    }
    EXPECT_LT(worst, 2e-7) << "at x = " << worst_x;
    std::printf("erf: max abs error %.3g at x = %g\n", worst, worst_x);
}

TEST_F(Activations_, ClampBoundsEveryElement) {
    // MPT's clip_qkv: exact, so compared bit for bit; in place as the model runs it.
    const std::size_t n = 50021;
    const auto x = activation_inputs(n, 150);
    for (const float bound : {0.5f, 6.0f, 1e30f}) {
        const DeviceTensor buf = upload_tensor(ctx(), x, DType::F32, "qkv", 1);
        auto list = ctx().command_list();
        record_clamp(ctx(), *list, buf.range(), buf.range(), bound);
        ctx().submit(*list);
        const auto y = download_tensor(ctx(), buf);
        for (std::size_t i = 0; i < n; ++i) {
            ASSERT_EQ(y[i], std::clamp(x[i], -bound, bound)) << "x = " << x[i] << " bound " << bound;
        }
    }
    auto list = ctx().command_list();
    const DeviceTensor buf = upload_tensor(ctx(), x, DType::F32, "qkv");
    EXPECT_THROW(record_clamp(ctx(), *list, buf.range(), buf.range(), 0.0f), Error);
    EXPECT_THROW(record_clamp(ctx(), *list, buf.range(), buf.range(), std::numeric_limits<float>::quiet_NaN()), Error);
}

TEST_F(Activations_, ResidualAddIsElementwiseAdd) {
    const std::size_t n = 3 * 1001;
    const auto a = random_uniform(n, 200), b = random_uniform(n, 201);
    const DeviceTensor ab = upload_tensor(ctx(), a, DType::F32, "a");
    const DeviceTensor bb = upload_tensor(ctx(), b, DType::F32, "b");
    auto list = ctx().command_list();
    record_add(ctx(), *list, ab.range(), bb.range(), ab.range());  // in place, as a residual stream
    ctx().submit(*list);
    const auto y = download_tensor(ctx(), ab);
    for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(y[i], a[i] + b[i]) << i;
    }
}

TEST_F(Activations_, BadArgumentsAreRefused) {
    Buffer a = ctx().create_buffer(40, MemoryKind::Device, "a");
    Buffer b = ctx().create_buffer(44, MemoryKind::Device, "b");
    auto list = ctx().command_list();
    EXPECT_THROW(record_activation(ctx(), *list, Activation::GeluTanh, whole(a), whole(b)), Error);
    EXPECT_THROW(record_activation(ctx(), *list, Activation::None, whole(a), whole(a)), Error);
}

// --- embedding ---

struct EmbeddingCase {
    std::uint32_t tokens, vocab, hidden;
    DType dtype;
    std::uint32_t pad = 0;
};

// Returns the number of dispatches recorded.
std::size_t run_embedding(Context& ctx, const EmbeddingCase& c, std::uint64_t seed) {
    SCOPED_TRACE("tokens" + std::to_string(c.tokens) + " vocab" + std::to_string(c.vocab) + " hidden" +
                 std::to_string(c.hidden) + " " + to_string(c.dtype) + " pad" + std::to_string(c.pad));
    const auto table = random_uniform(std::size_t{c.vocab} * c.hidden, seed, -1.0f, 1.0f);
    const auto words = random_words(c.tokens, seed + 1);
    std::vector<std::uint32_t> ids(c.tokens);
    for (std::uint32_t t = 0; t < c.tokens; ++t) {
        ids[t] = t % 11 == 5 ? c.vocab + words[t] % 3 : words[t] % c.vocab;  // some past the vocabulary
    }
    ids[0] = 0;
    if (c.tokens > 1)
        ids[c.tokens - 1] = c.vocab - 1;  // first and last rows
    const DeviceTensor tb = upload_tensor(ctx, table, c.dtype, "table", c.pad);
    const DeviceTensor ib = upload_words(ctx, ids, "ids", c.pad);
    const DeviceTensor ob = nan_tensor(ctx, std::size_t{c.tokens} * c.hidden, DType::F32, "embeddings", c.pad + 1);
    auto list = ctx.command_list();
    record_embedding(ctx, *list,
                     EmbeddingArgs{.ids = ib.range(),
                                   .table = tb.range(),
                                   .out = ob.range(),
                                   .tokens = c.tokens,
                                   .vocab = c.vocab,
                                   .hidden = c.hidden,
                                   .table_dtype = c.dtype});
    ctx.submit(*list);
    const auto out = download_tensor(ctx, ob);
    const auto ref = reference::embedding(ids, rounded_to(c.dtype, table), c.vocab, c.hidden);
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (out[i] != ref[i]) {  // a lookup is exact
            ADD_FAILURE() << "element " << i << " (token " << i / c.hidden << ", id " << ids[i / c.hidden]
                          << "): " << out[i] << " != " << ref[i];
            break;
        }
    }
    return list->op_count();
}

TEST_F(Activations_, EmbeddingLookupMatchesTheTable) {
    std::uint64_t seed = 300;
    for (DType t : {DType::F32, DType::F16}) {
        run_embedding(ctx(), {.tokens = 1, .vocab = 50, .hidden = 64, .dtype = t}, seed++);
        run_embedding(ctx(), {.tokens = 37, .vocab = 1000, .hidden = 67, .dtype = t, .pad = 1}, seed++);
        run_embedding(ctx(), {.tokens = 300, .vocab = 257, .hidden = 1024, .dtype = t, .pad = 3}, seed++);
    }
}

TEST(EmbeddingForcedLimits, ATableLargerThanTheStorageRangeIsBoundInRowRanges) {
    // 64 KiB bindings: a [1000, 67] table is 268 KB in fp32 and 134 KB in fp16, as BLOOM's
    // 250880 x 1024 fp16 table (490 MiB) is for lavapipe's 128 MiB.
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("storage_buffer_range=64K")));
    std::uint64_t seed = 400;
    for (DType t : {DType::F32, DType::F16}) {
        EXPECT_GE(run_embedding(ctx, {.tokens = 97, .vocab = 1000, .hidden = 67, .dtype = t, .pad = 1}, seed++), 3u);
        // Out over its range too: tokens in pieces.
        EXPECT_GE(run_embedding(ctx, {.tokens = 300, .vocab = 100, .hidden = 65, .dtype = t}, seed++), 2u);
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

// --- KV-cache append ---

struct KvCase {
    std::uint32_t batch, max_len, n_kv_head, head_dim;
    DType dtype;
};

// Appends `steps` (rows per step) one after another from a source of `src_floats` fp32
// values read through `layout_for(new_len)`, then compares the whole cache.
void run_kv(Context& ctx, const KvCase& c, std::span<const std::uint32_t> steps,
            const std::function<HeadLayout(std::uint32_t)>& layout_for,
            const std::function<std::size_t(std::uint32_t)>& src_floats, std::uint64_t seed) {
    SCOPED_TRACE("batch" + std::to_string(c.batch) + " max_len" + std::to_string(c.max_len) + " heads" +
                 std::to_string(c.n_kv_head) + " d" + std::to_string(c.head_dim) + " " + to_string(c.dtype));
    const std::size_t cache_n = std::size_t{c.batch} * c.max_len * c.n_kv_head * c.head_dim;
    auto cache_before = rounded_to(c.dtype, random_uniform(cache_n, seed, -1.0f, 1.0f));
    const DeviceTensor cache = upload_tensor(ctx, cache_before, c.dtype, "cache");
    std::vector<double> expected(cache_before.begin(), cache_before.end());
    std::uint32_t pos = 0;
    for (std::uint32_t new_len : steps) {
        const auto src = random_uniform(src_floats(new_len), seed + 1 + pos, -3.0f, 3.0f);
        const DeviceTensor sb = upload_tensor(ctx, src, DType::F32, "src", 1);
        const KvAppendArgs args{.src = sb.range(),
                                .src_layout = layout_for(new_len),
                                .cache = cache.range(),
                                .shape = {.batch = c.batch,
                                          .new_len = new_len,
                                          .n_kv_head = c.n_kv_head,
                                          .head_dim = c.head_dim,
                                          .max_len = c.max_len,
                                          .pos = pos},
                                .cache_dtype = c.dtype};
        auto list = ctx.command_list();
        record_kv_append(ctx, *list, args);
        ctx.submit(*list);
        const std::vector<float> as_floats(expected.begin(), expected.end());
        expected = reference::kv_append(as_floats, rounded_to(c.dtype, src), args.src_layout, args.shape);
        pos += new_len;
    }
    const auto out = download_tensor(ctx, cache);
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (out[i] != static_cast<float>(expected[i])) {  // a copy (fp16: one rounding) is exact
            ADD_FAILURE() << "cache element " << i << ": " << out[i] << " != " << expected[i];
            break;
        }
    }
}

TEST_F(Activations_, KvAppendFromDenseRows) {
    std::uint64_t seed = 500;
    const std::uint32_t steps[] = {7, 1, 1, 3};
    for (DType t : {DType::F32, DType::F16}) {
        // 64, and head sizes off the attention's tuned table: 4n + 2 (an odd number of fp16
        // pairs per row) and MPT-30B's 112.
        for (const std::uint32_t d : {64u, 6u, 18u, 112u}) {
            const KvCase c{2, 20, 3, d, t};
            run_kv(
                ctx(), c, steps, [&](std::uint32_t len) { return HeadLayout::dense(len, c.n_kv_head, c.head_dim); },
                [&](std::uint32_t len) { return std::size_t{c.batch} * len * c.n_kv_head * c.head_dim; }, seed++);
        }
    }
}

TEST_F(Activations_, KvAppendFromFusedQkvLayouts) {
    std::uint64_t seed = 600;
    const std::uint32_t steps[] = {5, 1, 2};
    for (DType t : {DType::F32, DType::F16}) {
        // BLOOM: per token [n_head, 3, head_dim]; K of head h at h * 3 * d + d.
        const std::uint32_t heads = 4, d = 32;
        const KvCase bloom{1, 9, heads, d, t};
        run_kv(
            ctx(), bloom, steps,
            [&](std::uint32_t len) {
                return HeadLayout{.offset = d,
                                  .batch_stride = std::uint64_t{len} * 3 * heads * d,
                                  .token_stride = 3 * heads * d,
                                  .head_stride = 3 * d};
            },
            [&](std::uint32_t len) { return std::size_t{len} * 3 * heads * d; }, seed++);
        // MPT: per token [q | k | v], with 12 heads of 16 (V part; batch 2).
        const std::uint32_t mh = 12, md = 16, hidden = mh * md;
        const KvCase mpt{2, 8, mh, md, t};
        run_kv(
            ctx(), mpt, steps,
            [&](std::uint32_t len) {
                return HeadLayout{.offset = 2 * hidden,
                                  .batch_stride = std::uint64_t{len} * 3 * hidden,
                                  .token_stride = 3 * hidden,
                                  .head_stride = md};
            },
            [&](std::uint32_t len) { return std::size_t{2} * len * 3 * hidden; }, seed++);
    }
}

TEST_F(Activations_, KvAppendRefusesRowsPastTheCache) {
    Buffer src = ctx().create_buffer(4 * 64 * 2, MemoryKind::Device, "src");
    Buffer cache = ctx().create_buffer(4 * 64 * 4, MemoryKind::Device, "cache");
    auto list = ctx().command_list();
    KvAppendArgs a{.src = whole(src),
                   .src_layout = HeadLayout::dense(2, 1, 64),
                   .cache = whole(cache),
                   .shape = {.batch = 1, .new_len = 2, .n_kv_head = 1, .head_dim = 64, .max_len = 4, .pos = 3}};
    try {
        record_kv_append(ctx(), *list, a);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("do not fit the cache"), std::string::npos) << e.what();
    }
    a.shape.pos = 2;
    a.shape.new_len = 3;
    EXPECT_THROW(record_kv_append(ctx(), *list, a), Error);  // the source is too short
}

// Gated units (SwiGLU, GEGLU): gate and up as the two halves of one fused projection's rows
// (JinaBERT's gated_layers) and as separate tensors, odd sizes, against the reference.
void check_gated(Context& ctx, Activation act, std::uint32_t rows, std::uint32_t cols, bool halves,
                 std::uint64_t seed) {
    SCOPED_TRACE(std::string(to_string(act)) + " rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) +
                 (halves ? " halves" : " separate"));
    const std::uint32_t stride = halves ? 2 * cols : cols + 3;
    const std::size_t view = std::size_t{rows - 1} * stride + cols;
    const auto a = activation_inputs(view + (halves ? cols : 0), seed);
    const auto b = random_uniform(halves ? 0 : view, seed + 1, -3.0f, 3.0f);
    const DeviceTensor ab = upload_tensor(ctx, a, DType::F32, "a", 1);
    std::optional<DeviceTensor> bb;
    if (!halves)
        bb = upload_tensor(ctx, b, DType::F32, "b", 2);
    const DeviceTensor y = nan_tensor(ctx, std::size_t{rows} * cols, DType::F32, "y", 3);
    const BufferRange gate = ab.range();
    BufferRange up = halves ? ab.range() : bb->range();
    if (halves) {
        up.offset += 4ull * cols;
        up.size -= 4ull * cols;
    }
    auto list = ctx.command_list();
    record_gated_activation(ctx, *list,
                            GatedActivationArgs{.gate = gate,
                                                .up = up,
                                                .y = y.range(),
                                                .rows = rows,
                                                .cols = cols,
                                                .gate_stride = stride,
                                                .up_stride = stride,
                                                .activation = act});
    ctx.submit(*list);
    const auto got = download_tensor(ctx, y);
    const std::vector<double> ad(a.begin(), a.end());
    std::vector<double> bd(b.begin(), b.end());
    if (halves) {
        bd.assign(a.begin() + cols, a.end());
    }
    const auto ref = reference::gated_activation(ad, bd, rows, cols, stride, stride, act);
    double worst = 0.0;  // relative to max(1, |ref|): the products of tiny gates are tiny
    for (std::size_t i = 0; i < ref.size(); ++i) {
        worst = std::max(worst, std::abs(got[i] - ref[i]) / std::max(1.0, std::abs(ref[i])));
    }
    const ErrorStats e = compare_to_reference(got, ref);
    EXPECT_EQ(e.first_nonfinite, SIZE_MAX) << "unwritten or non-finite output at " << e.first_nonfinite;
    EXPECT_LT(e.rel_l2, 1e-5) << describe(e);
    EXPECT_LT(worst, 2e-6);
}

TEST_F(Activations_, GatedUnitsMatchTheReference) {
    std::uint64_t seed = 700;
    for (Activation act : {Activation::Silu, Activation::GeluErf, Activation::GeluTanh}) {
        check_gated(ctx(), act, 1, 1, true, seed++);
        check_gated(ctx(), act, 7, 113, true, seed++);
        check_gated(ctx(), act, 130, 67, false, seed++);
        check_gated(ctx(), act, 3, 3001, true, seed++);
    }
}

TEST_F(Activations_, GatedUnitsRefuseBadArguments) {
    const DeviceTensor a = upload_tensor(ctx(), std::vector<float>(64, 1.0f), DType::F32, "a");
    const DeviceTensor y = nan_tensor(ctx(), 32, DType::F32, "y");
    auto list = ctx().command_list();
    GatedActivationArgs args{.gate = a.range(),
                             .up = a.range(),
                             .y = y.range(),
                             .rows = 4,
                             .cols = 8,
                             .gate_stride = 16,
                             .up_stride = 16,
                             .activation = Activation::None};
    EXPECT_NE(error_message([&] { record_gated_activation(ctx(), *list, args); }).find("no activation"),
              std::string::npos);
    args.activation = Activation::Silu;
    args.up_stride = 7;
    EXPECT_NE(error_message([&] { record_gated_activation(ctx(), *list, args); }).find("must be at least cols"),
              std::string::npos);
    args.up_stride = 20;  // the view needs 3 * 20 + 8 = 68 elements
    EXPECT_NE(error_message([&] { record_gated_activation(ctx(), *list, args); }).find("needs 68 fp32 elements"),
              std::string::npos);
    EXPECT_NE(error_message([&] {
                  record_activation(ctx(), *list, Activation::Silu, a.range(), a.range());
              }).find("not silu"),
              std::string::npos);
}

}  // namespace
}  // namespace vkf::test
