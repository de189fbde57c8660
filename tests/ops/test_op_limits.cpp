// Every op against device limits that cut across ops: a device with Vulkan's guaranteed
// minimum of 4 storage buffers per shader stage (the ops that bind more refuse with a
// message naming the op and both counts, before any Vulkan object is made, so no crash and no
// validation message), the phone preset (every op still plans and creates its pipelines), and
// group counts over a small maxComputeWorkGroupCount in the second grid dimension.

#include "host/ops/attention.hpp"
#include "host/ops/attention_naive.hpp"
#include "host/ops/device_tensor.hpp"
#include "host/ops/elementwise.hpp"
#include "host/ops/embedding.hpp"
#include "host/ops/layernorm.hpp"
#include "host/ops/matmul.hpp"
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

TEST(OpsForcedLimits, FourStorageBuffersPerStageGiveClearErrors) {
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("storage_buffers=4")));
    ASSERT_EQ(ctx.limits().storage_buffers, 4u);
    EXPECT_TRUE(ctx.limits().forced);
    // Attention binds Q, K, V, O, the slope table and the key lengths; no kernel binds fewer.
    const AttentionParams params{.shape = {1, 9, 9, 4, 2, 64}};
    for (AttentionKernel kernel : {AttentionKernel::Auto, AttentionKernel::Tiled, AttentionKernel::Rows}) {
        expect_error([&] { Attention(ctx, params, DType::F32, AttentionOptions{.kernel = kernel}); },
                     "attention needs 6 storage buffers per shader stage; the device allows 4");
    }
    expect_error([&] { (void)plan_attention(attention_device(ctx), params.shape); },
                 "attention needs 6 storage buffers per shader stage; the device allows 4");
    // The naive reference kernels: their scores pass binds 5.
    EXPECT_NE(naive_attention_impossible(ctx.limits(), params).value_or("").find("naive attention needs 5"),
              std::string::npos);
    expect_error([&] { NaiveAttention(ctx, params, DType::F32); },
                 "naive attention needs 5 storage buffers per shader stage; the device allows 4");
    // Matmul binds X, W, bias, residual and Y (block-quantized weights their scales as well).
    for (QuantFormat quant : {QuantFormat::None, QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        const std::string needed = quant == QuantFormat::None ? "matmul needs 5 storage buffers"
                                                              : std::string("matmul with ") + to_string(quant) +
                                                                    " weights needs 6 storage buffers";
        expect_error([&] { (void)matmul_scratch_bytes(ctx, 1, 64, 64, DType::F16, {}, quant); }, needed);
        MatmulBuffers b = matmul_buffers(ctx, 1, 64, 64, quant);
        MatmulArgs args{.x = b.x.range(),
                        .w = b.w.range(),
                        .y = b.y.range(),
                        .m = 1,
                        .n = 64,
                        .k = 64,
                        .weight_dtype = DType::F16,
                        .quant = quant,
                        .scales = quant == QuantFormat::None ? BufferRange{} : b.scales.range()};
        auto list = ctx.command_list();
        expect_error([&] { record_matmul(ctx, *list, args); }, needed + " per shader stage; the device allows 4");
        EXPECT_EQ(list->op_count(), 0u);
    }
    // Ops that bind 4 or fewer still run.
    const std::uint32_t n = 1000;
    const DeviceTensor a = upload_tensor(ctx, random_uniform(n, 5), DType::F32, "a");
    const DeviceTensor sum = nan_tensor(ctx, n, DType::F32, "a + a");
    const DeviceTensor normed = nan_tensor(ctx, n, DType::F32, "layernorm");
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
    for (std::uint32_t i = 0; i < n; ++i) {
        ASSERT_EQ(out[i], in[i] + in[i]) << "element " << i;
    }
    for (float v : download_tensor(ctx, normed)) {
        ASSERT_TRUE(std::isfinite(v));
    }
    EXPECT_EQ(sink.validation_count(), 0u);
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
