// Every op against device limits that cut across ops: a device with Vulkan's guaranteed
// minimum of 4 storage buffers per shader stage (attention, the naive attention and matmul
// take their fallbacks that bind 4 or fewer, checked against the reference; the QKV scatter,
// which binds more, and everything below 4 refuse with a message naming the op and both counts,
// before any Vulkan object is made, so no crash and no validation message), the phone preset
// (every op still plans and creates its pipelines), and group counts over a small
// maxComputeWorkGroupCount in the second grid dimension.

#include "host/ops/attention.hpp"
#include "host/ops/attention_naive.hpp"
#include "host/ops/device_tensor.hpp"
#include "host/ops/elementwise.hpp"
#include "host/ops/embedding.hpp"
#include "host/ops/layernorm.hpp"
#include "host/ops/matmul.hpp"
#include "host/quant/quant_format.hpp"
#include "host/reference/attention.hpp"
#include "host/reference/ops.hpp"
#include "host/util/compare.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

namespace vkf::test {
namespace {

void expect_error(const std::function<void()>& action, const std::string& needle) {
    const std::string message = error_message(action);
    EXPECT_NE(message.find(needle), std::string::npos) << "message: " << message;
}

// Device buffers for one matmul of m x n x k (dense fp16 or block-quantized weights).
struct MatmulBuffers {
    DeviceTensor x, w, scales, y;
    Buffer scratch;
};

MatmulBuffers matmul_buffers(Context& ctx, std::uint32_t m, std::uint32_t n, std::uint32_t k, QuantFormat quant) {
    MatmulBuffers b{.x = upload_tensor(ctx, random_uniform(std::size_t{m} * k, 1), DType::F32, "X"),
                    .w = quant == QuantFormat::None
                             ? upload_tensor(ctx, random_uniform(std::size_t{n} * k, 2), DType::F16, "W")
                             : upload_words(ctx, random_words(n * quant_row_bytes(quant, k) / 4, 3), "W values"),
                    .scales = upload_tensor(ctx, random_uniform(std::size_t{n} * quant_row_scales(k), 4, 0.01f, 0.1f),
                                            DType::F16, "W scales"),
                    .y = nan_tensor(ctx, std::size_t{m} * n, DType::F32, "Y")};
    return b;
}

MatmulArgs matmul_args(Context& ctx, MatmulBuffers& b, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                       QuantFormat quant, MatmulOptions options = {}) {
    MatmulArgs a{.x = b.x.range(),
                 .w = b.w.range(),
                 .y = b.y.range(),
                 .m = m,
                 .n = n,
                 .k = k,
                 .weight_dtype = DType::F16,
                 .options = options,
                 .quant = quant,
                 .scales = quant == QuantFormat::None ? BufferRange{} : b.scales.range()};
    const std::uint64_t scratch = matmul_scratch_bytes(ctx, m, n, k, DType::F16, options, quant);
    if (scratch > 0) {
        b.scratch = ctx.create_buffer(scratch, MemoryKind::Device, "matmul scratch");
        a.scratch = whole(b.scratch);
    }
    return a;
}

TEST(OpsForcedLimits, FourStorageBuffersPerStageRunTheFallbacks) {
    // Vulkan's minimum of 4 storage buffers per stage: attention takes its PACKED_TABLES
    // variants (slope table and key counts after the partial rows, combine pass always), the
    // naive attention its PACKED_TABLES scores pass, and matmul its separate epilogue (partial
    // sums, then the reduce pass); all still match the reference. The QKV scatter refuses,
    // naming the op and both counts.
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("storage_buffers=4")));
    ASSERT_EQ(ctx.limits().storage_buffers, 4u);
    EXPECT_TRUE(ctx.limits().forced);
    // Attention: a slope table, per-batch key counts (from params and from a buffer).
    const std::vector<float> slopes = {0.5f, 0.25f, 0.125f, 0.0625f};
    const std::vector<std::uint32_t> kv_lens = {9, 6};
    const AttentionShape shape{2, 5, 9, 4, 2, 64};
    const auto q = random_uniform(q_element_count(shape), 11);
    const auto k = random_uniform(kv_element_count(shape), 12);
    const auto v = random_uniform(kv_element_count(shape), 13);
    const AttentionParams params{.shape = shape, .slopes = slopes, .kv_lens = kv_lens};
    const auto ref = reference::attention(params, q, k, v);
    for (AttentionKernel kernel : {AttentionKernel::Auto, AttentionKernel::Tiled, AttentionKernel::Rows}) {
        const AttentionOptions options{.kernel = kernel};
        const AttentionPlan plan = plan_attention(attention_device(ctx), shape, options);
        EXPECT_TRUE(plan.packed_tables) << plan.describe();
        const auto out = attention(ctx, params, q, k, v, DType::F32, options);
        const ErrorStats e = compare_to_reference(out, ref);
        EXPECT_LT(e.max_rel, 1e-5) << to_string(kernel) << ": " << plan.describe();
    }
    {
        // External key counts (a recorded list re-submitted as a cache grows): copied into the
        // partials buffer's tables by the list itself.
        AttentionParams external = params;
        external.kv_lens = {};
        const Attention op(ctx, external, DType::F32, AttentionOptions{.external_kv_lens = true});
        ASSERT_TRUE(op.plan().packed_tables);
        const DeviceTensor qt = upload_tensor(ctx, q, DType::F32, "Q");
        const DeviceTensor kt = upload_tensor(ctx, k, DType::F32, "K");
        const DeviceTensor vt = upload_tensor(ctx, v, DType::F32, "V");
        const DeviceTensor lens = upload_words(ctx, kv_lens, "kv lens");
        const DeviceTensor ot = nan_tensor(ctx, q.size(), DType::F32, "O");
        auto list = ctx.command_list();
        op.record(*list, qt.range(), kt.range(), vt.range(), ot.range(), lens.range());
        ctx.submit(*list);
        EXPECT_LT(compare_to_reference(download_tensor(ctx, ot), ref).max_rel, 1e-5);
    }
    // The naive kernels: their scores pass binds Q, K and the scores with the tables after them.
    EXPECT_EQ(naive_attention_impossible(ctx.limits(), params), std::nullopt);
    {
        const NaiveAttention naive(ctx, params, DType::F32);
        const DeviceTensor qt = upload_tensor(ctx, q, DType::F32, "Q");
        const DeviceTensor kt = upload_tensor(ctx, k, DType::F32, "K");
        const DeviceTensor vt = upload_tensor(ctx, v, DType::F32, "V");
        const DeviceTensor ot = nan_tensor(ctx, q.size(), DType::F32, "O");
        auto list = ctx.command_list();
        naive.record(*list, qt.range(), kt.range(), vt.range(), ot.range());
        ctx.submit(*list);
        EXPECT_LT(compare_to_reference(download_tensor(ctx, ot), ref).max_rel, 1e-5);
    }

    // Matmul with bias, residual and GELU, dense and block-quantized, unsplit and split-K.
    const std::uint32_t m = 3, n = 40, k_dim = 64;
    for (QuantFormat quant : {QuantFormat::None, QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        for (std::uint32_t splits : {0u, 2u}) {
            const MatmulOptions options{.force_splits = splits};
            const MatmulPlan plan = plan_matmul(matmul_device(ctx), m, n, k_dim, DType::F16, options, quant);
            EXPECT_TRUE(plan.separate_epilogue) << plan.describe();
            MatmulOptions fused = options;
            fused.scatter = true;
            fused.x_norm = true;
            const MatmulPlan refused = plan_matmul(matmul_device(ctx), m, n, k_dim, DType::F16, fused, quant);
            EXPECT_FALSE(refused.scatter || refused.x_norm) << refused.describe();
            EXPECT_GT(plan.scratch_bytes, 0u);
            MatmulBuffers b = matmul_buffers(ctx, m, n, k_dim, quant);
            const auto bias = random_uniform(n, 14);
            const auto residual = random_uniform(std::size_t{m} * n, 15);
            const DeviceTensor bt = upload_tensor(ctx, bias, DType::F16, "bias");
            const DeviceTensor rt = upload_tensor(ctx, residual, DType::F32, "residual");
            MatmulArgs args = matmul_args(ctx, b, m, n, k_dim, quant, options);
            args.bias = bt.range();
            args.residual = rt.range();
            args.activation = Activation::GeluTanh;
            auto list = ctx.command_list();
            record_matmul(ctx, *list, args);
            ctx.submit(*list);
            // The weights as the GPU reads them: fp16, or dequantized blocks.
            std::vector<float> w(std::size_t{n} * k_dim);
            if (quant == QuantFormat::None) {
                w = rounded_to(DType::F16, random_uniform(std::size_t{n} * k_dim, 2));
            } else {
                const auto words = random_words(n * quant_row_bytes(quant, k_dim) / 4, 3);
                const std::size_t n_scales = std::size_t{n} * quant_row_scales(k_dim);
                const auto scales = floats_to_halves(random_uniform(n_scales, 4, 0.01f, 0.1f));
                const auto* bytes = reinterpret_cast<const std::uint8_t*>(words.data());
                const std::size_t row_bytes = quant_row_bytes(quant, k_dim), row_scales = quant_row_scales(k_dim);
                for (std::uint32_t r = 0; r < n; ++r) {
                    dequantize_row(quant, {bytes + r * row_bytes, row_bytes},
                                   {scales.data() + r * row_scales, row_scales},
                                   {w.data() + std::size_t{r} * k_dim, k_dim});
                }
            }
            const auto ref_y =
                reference::matmul(random_uniform(std::size_t{m} * k_dim, 1), w, rounded_to(DType::F16, bias), residual,
                                  m, n, k_dim, Activation::GeluTanh);
            const ErrorStats e = compare_to_reference(download_tensor(ctx, b.y), ref_y);
            EXPECT_LT(e.max_rel, 1e-5) << to_string(quant) << ": " << plan.describe();
        }
        // The QKV scatter's kernels bind the caches and the slots as well: refused.
        MatmulBuffers b = matmul_buffers(ctx, 1, 3 * 32, k_dim, quant);
        const DeviceTensor cache_k = nan_tensor(ctx, 4 * 32, DType::F32, "K cache");
        const DeviceTensor cache_v = nan_tensor(ctx, 4 * 32, DType::F32, "V cache");
        const DeviceTensor slots = upload_words(ctx, std::vector<std::uint32_t>{1}, "slots");
        const DeviceTensor q_out = nan_tensor(ctx, 32, DType::F32, "Q");
        MatmulArgs args = matmul_args(ctx, b, 1, 3 * 32, k_dim, quant);
        args.y = q_out.range();
        args.scatter = QkvScatter{.k_cache = cache_k.range(),
                                  .v_cache = cache_v.range(),
                                  .slots = slots.range(),
                                  .cache_dtype = DType::F32,
                                  .head_dim = 32,
                                  .q_heads = 1,
                                  .kv_heads = 1};
        auto list = ctx.command_list();
        expect_error([&] { record_matmul(ctx, *list, args); },
                     std::string("matmul with a QKV scatter (MatmulArgs::scatter) needs ") +
                         (quant == QuantFormat::None ? "7" : "8") +
                         " storage buffers per shader stage; the device allows 4");
        EXPECT_EQ(list->op_count(), 0u);
    }
    // Ops that bind 4 or fewer run as they are.
    const std::uint32_t count = 1000;
    const DeviceTensor a = upload_tensor(ctx, random_uniform(count, 5), DType::F32, "a");
    const DeviceTensor sum = nan_tensor(ctx, count, DType::F32, "a + a");
    const DeviceTensor normed = nan_tensor(ctx, count, DType::F32, "layernorm");
    const DeviceTensor weight = upload_tensor(ctx, random_uniform(100, 6), DType::F32, "weight");
    const DeviceTensor bias = upload_tensor(ctx, random_uniform(100, 7), DType::F32, "bias");
    auto list = ctx.command_list();
    record_add(ctx, *list, a.range(), a.range(), sum.range());
    record_layernorm(ctx, *list,
                     LayerNormArgs{.x = a.range(),
                                   .weight = weight.range(),
                                   .bias = bias.range(),
                                   .y = normed.range(),
                                   .rows = 10,
                                   .dim = 100});
    ctx.submit(*list);
    const auto in = download_tensor(ctx, a);
    const auto out = download_tensor(ctx, sum);
    for (std::uint32_t i = 0; i < count; ++i) {
        ASSERT_EQ(out[i], in[i] + in[i]) << "element " << i;
    }
    for (float x : download_tensor(ctx, normed)) {
        ASSERT_TRUE(std::isfinite(x));
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(OpsForcedLimits, FewerThanFourStorageBuffersPerStageGiveClearErrors) {
    // Below Vulkan's minimum (a forced limit only): attention and matmul have nothing that
    // binds fewer than 4 and refuse before any Vulkan object is made.
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("storage_buffers=3")));
    ASSERT_EQ(ctx.limits().storage_buffers, 3u);
    const AttentionParams params{.shape = {1, 9, 9, 4, 2, 64}};
    for (AttentionKernel kernel : {AttentionKernel::Auto, AttentionKernel::Tiled, AttentionKernel::Rows}) {
        expect_error([&] { Attention(ctx, params, DType::F32, AttentionOptions{.kernel = kernel}); },
                     "attention needs 4 storage buffers per shader stage; the device allows 3");
    }
    expect_error([&] { (void)plan_attention(attention_device(ctx), params.shape); },
                 "attention needs 4 storage buffers per shader stage; the device allows 3");
    // The naive kernels' packed scores pass binds 3: it still runs (checked in the test above
    // at 4); at 2 it refuses.
    EXPECT_EQ(naive_attention_impossible(ctx.limits(), params), std::nullopt);
    ComputeLimits two = ctx.limits();
    two.storage_buffers = 2;
    EXPECT_NE(naive_attention_impossible(two, params)
                  .value_or("")
                  .find("naive attention needs 3 storage buffers per shader stage; the device allows 2"),
              std::string::npos);
    for (QuantFormat quant : {QuantFormat::None, QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        const std::string needed = quant == QuantFormat::None ? "matmul needs 4 storage buffers"
                                                              : std::string("matmul with ") + to_string(quant) +
                                                                    " weights needs 4 storage buffers";
        expect_error([&] { (void)matmul_scratch_bytes(ctx, 1, 64, 64, DType::F16, {}, quant); }, needed);
        MatmulBuffers b = matmul_buffers(ctx, 1, 64, 64, quant);
        const MatmulArgs args{.x = b.x.range(),
                              .w = b.w.range(),
                              .y = b.y.range(),
                              .m = 1,
                              .n = 64,
                              .k = 64,
                              .weight_dtype = DType::F16,
                              .quant = quant,
                              .scales = quant == QuantFormat::None ? BufferRange{} : b.scales.range()};
        auto list = ctx.command_list();
        expect_error([&] { record_matmul(ctx, *list, args); }, needed + " per shader stage; the device allows 3");
        EXPECT_EQ(list->op_count(), 0u);
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(OpsForcedLimits, AttentionWithPackedTablesRefusesOutputsPastTheStorageBufferRange) {
    // The PACKED_TABLES path keeps every output row in its partials buffer, which must fit
    // one binding: a plan past maxStorageBufferRange is refused naming both sizes.
    ComputeLimits limits{.shared_memory = 16384,
                         .workgroup_invocations = 128,
                         .workgroup_size = {128, 128, 64},
                         .storage_buffer_range = 1u << 20,
                         .storage_buffers = 4};
    // 1024 x 4 rows of 66 floats and the tables (4 slopes, 1 key count): 1081364 bytes.
    const AttentionShape shape{1, 1024, 1024, 4, 4, 64};
    expect_error([&] { (void)plan_attention(limits, shape); },
                 "attention: with 4 storage buffers per shader stage (fewer than the 6 of the fused kernels) the "
                 "output rows pass through a partials buffer of 1081364 bytes, over maxStorageBufferRange "
                 "(1048576 bytes)");
    limits.storage_buffers = 6;
    EXPECT_FALSE(plan_attention(limits, shape).packed_tables);
}

TEST(OpsForcedLimits, FewerStorageBuffersThanAKernelBindsAreRefusedByThePipeline) {
    // The pipeline's own check, for kernels no op plan stops first: elementwise add binds 3.
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("storage_buffers=2")));
    const DeviceTensor a = upload_tensor(ctx, random_uniform(64, 8), DType::F32, "a");
    const DeviceTensor out = nan_tensor(ctx, 64, DType::F32, "out");
    auto list = ctx.command_list();
    record_copy(ctx, *list, a.range(), out.range());  // 2 bindings
    expect_error([&] { record_add(ctx, *list, a.range(), a.range(), out.range()); },
                 "needs 3 storage buffers per shader stage; the device allows 2");
    ctx.submit(*list);
    EXPECT_EQ(download_tensor(ctx, out), download_tensor(ctx, a));
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(OpsForcedLimits, PhonePlansEveryOp) {
    // Attention (both kernels, prefill and decoding, every storage), the naive kernels and
    // matmul (every kernel that fits, dense and block-quantized, decoding and prefill) plan
    // and create their pipelines under the phone preset, storage-buffer limit included.
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::phone()));
    EXPECT_LE(ctx.limits().storage_buffers, 8u);
    for (const AttentionShape& shape : {AttentionShape{1, 1, 2048, 8, 2, 128}, AttentionShape{2, 100, 100, 6, 3, 64}}) {
        for (AttentionKernel kernel : {AttentionKernel::Auto, AttentionKernel::Tiled, AttentionKernel::Rows}) {
            for (DType dtype : {DType::F32, DType::F16}) {
                const Attention op(ctx, AttentionParams{.shape = shape}, dtype, AttentionOptions{.kernel = kernel});
                EXPECT_LE(op.plan().shared_bytes, ctx.limits().shared_memory) << op.plan().describe();
            }
            const Attention kv16(ctx, AttentionParams{.shape = shape}, DType::F32,
                                 AttentionOptions{.kernel = kernel, .kv_dtype = DType::F16});
        }
        const NaiveAttention naive(ctx, AttentionParams{.shape = shape}, DType::F32);
    }
    for (QuantFormat quant : {QuantFormat::None, QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        for (MatmulKernel kernel : {MatmulKernel::Auto, MatmulKernel::Tiled, MatmulKernel::Gemv, MatmulKernel::Blocked,
                                    MatmulKernel::RowDot}) {
            for (std::uint32_t m : {1u, 64u}) {
                const std::uint32_t n = 96, k = 256;
                try {
                    (void)plan_matmul(matmul_device(ctx), m, n, k, DType::F16, {.kernel = kernel}, quant);
                } catch (const Error& e) {
                    // Kernels that cannot read these weights or need subgroup operations here;
                    // Auto must always plan.
                    EXPECT_NE(kernel, MatmulKernel::Auto) << e.what();
                    continue;
                }
                MatmulBuffers b = matmul_buffers(ctx, m, n, k, quant);
                const MatmulArgs args = matmul_args(ctx, b, m, n, k, quant, {.kernel = kernel});
                auto list = ctx.command_list();
                record_matmul(ctx, *list, args);
                ctx.submit(*list);
            }
        }
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(OpsForcedLimits, EmbeddingRowsOverTheGroupCountLimitAreSplit) {
    // One workgroup row per token: 37 tokens over a limit of 2 groups per dimension.
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("workgroup_count=2")));
    ASSERT_EQ(ctx.limits().workgroup_count[1], 2u);
    const std::uint32_t tokens = 37, vocab = 50, hidden = 300;
    const auto table = random_uniform(std::size_t{vocab} * hidden, 9);
    const auto words = random_words(tokens, 10);
    std::vector<std::uint32_t> ids(tokens);
    for (std::uint32_t t = 0; t < tokens; ++t) {
        ids[t] = words[t] % vocab;
    }
    const DeviceTensor tb = upload_tensor(ctx, table, DType::F32, "table");
    const DeviceTensor ib = upload_words(ctx, ids, "ids");
    const DeviceTensor ob = nan_tensor(ctx, std::size_t{tokens} * hidden, DType::F32, "embeddings");
    auto list = ctx.command_list();
    record_embedding(ctx, *list,
                     EmbeddingArgs{.ids = ib.range(),
                                   .table = tb.range(),
                                   .out = ob.range(),
                                   .tokens = tokens,
                                   .vocab = vocab,
                                   .hidden = hidden});
    ctx.submit(*list);
    EXPECT_GE(list->dispatch_command_count(), tokens / 2);
    const auto out = download_tensor(ctx, ob);
    for (std::size_t i = 0; i < out.size(); ++i) {
        ASSERT_EQ(out[i], table[std::size_t{ids[i / hidden]} * hidden + i % hidden]) << "element " << i;
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

}  // namespace
}  // namespace vkf::test
