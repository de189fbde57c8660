// Embedding lookup in block-quantized tables (q8_0, q4_0): every element must equal the
// CPU's exact dequantization (dequantize_row), ids past the vocabulary give zeros, tables
// larger than the storage range are bound in row ranges, and bad tables are refused
// naming the tensor. Outputs are poisoned (NaN) before every run.

#include "host/ops/device_tensor.hpp"
#include "host/ops/embedding.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <cstring>

namespace vkf::test {
namespace {

struct Case {
    std::uint32_t tokens, vocab, hidden;
    QuantFormat quant;
    std::uint32_t pad = 0;    // elements in front of ids, scales and out (odd: unaligned)
    std::uint32_t w_pad = 0;  // words in front of the values
};

// Returns the number of dispatches recorded.
std::size_t run_case(Context& ctx, const Case& c, std::uint64_t seed) {
    SCOPED_TRACE("tokens" + std::to_string(c.tokens) + " vocab" + std::to_string(c.vocab) + " hidden" +
                 std::to_string(c.hidden) + " " + to_string(c.quant) + " pad" + std::to_string(c.pad) + " w_pad" +
                 std::to_string(c.w_pad));
    const auto table = random_uniform(std::size_t{c.vocab} * c.hidden, seed, -1.0f, 1.0f);
    const std::uint64_t row_bytes = quant_row_bytes(c.quant, c.hidden), row_scales = quant_row_scales(c.hidden);
    std::vector<std::uint8_t> values(c.vocab * row_bytes);
    std::vector<std::uint16_t> scales(c.vocab * row_scales);
    std::vector<float> exact(table.size());
    for (std::uint32_t r = 0; r < c.vocab; ++r) {
        const std::span v(values.data() + r * row_bytes, row_bytes);
        const std::span s(scales.data() + r * row_scales, row_scales);
        quantize_row(c.quant, std::span(table).subspan(std::size_t{r} * c.hidden, c.hidden), v, s);
        dequantize_row(c.quant, v, s, std::span(exact.data() + std::size_t{r} * c.hidden, c.hidden));
    }
    const auto words = random_words(c.tokens, seed + 1);
    std::vector<std::uint32_t> ids(c.tokens);
    for (std::uint32_t t = 0; t < c.tokens; ++t) {
        ids[t] = t % 11 == 5 ? c.vocab + words[t] % 3 : words[t] % c.vocab;  // some past the vocabulary
    }
    ids[0] = 0;
    if (c.tokens > 1)
        ids[c.tokens - 1] = c.vocab - 1;  // first and last rows

    std::vector<std::uint32_t> value_words(values.size() / 4);
    std::memcpy(value_words.data(), values.data(), values.size());
    std::vector<float> scale_floats(scales.size());
    std::transform(scales.begin(), scales.end(), scale_floats.begin(), half_to_float);
    const DeviceTensor vb = upload_words(ctx, value_words, "table values", c.w_pad);
    const DeviceTensor sb = upload_tensor(ctx, scale_floats, DType::F16, "table scales", c.pad);
    const DeviceTensor ib = upload_words(ctx, ids, "ids", c.pad);
    const DeviceTensor ob = nan_tensor(ctx, std::size_t{c.tokens} * c.hidden, DType::F32, "embeddings", c.pad + 1);
    auto list = ctx.command_list();
    record_embedding(ctx, *list,
                     EmbeddingArgs{.ids = ib.range(),
                                   .table = vb.range(),
                                   .out = ob.range(),
                                   .tokens = c.tokens,
                                   .vocab = c.vocab,
                                   .hidden = c.hidden,
                                   .quant = c.quant,
                                   .scales = sb.range()});
    ctx.submit(*list);
    const auto out = download_tensor(ctx, ob);
    for (std::size_t i = 0; i < out.size(); ++i) {
        const std::uint32_t id = ids[i / c.hidden];
        const float want = id < c.vocab ? exact[std::size_t{id} * c.hidden + i % c.hidden] : 0.0f;
        if (out[i] != want) {  // a lookup is exact
            ADD_FAILURE() << "element " << i << " (token " << i / c.hidden << ", id " << id << "): " << out[i]
                          << " != " << want;
            break;
        }
    }
    return list->op_count();
}

class EmbeddingQuant : public VulkanTest {};

TEST_F(EmbeddingQuant, LookupEqualsTheExactDequantization) {
    std::uint64_t seed = 300;
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        EXPECT_EQ(run_case(ctx(), {.tokens = 1, .vocab = 50, .hidden = 64, .quant = f}, seed++), 1u);
        run_case(ctx(), {.tokens = 37, .vocab = 1000, .hidden = 96, .quant = f, .pad = 1, .w_pad = 1}, seed++);
        run_case(ctx(), {.tokens = 300, .vocab = 257, .hidden = 1056, .quant = f, .pad = 3, .w_pad = 3}, seed++);
    }
}

TEST(EmbeddingQuantForcedLimits, ATableLargerThanTheStorageRangeIsBoundInRowRanges) {
    // 64 KiB bindings: a [1000, 160] table is 160 KB of q8_0 values (80 KB q4_0).
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("storage_buffer_range=64K")));
    std::uint64_t seed = 400;
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        const std::size_t dispatches =
            run_case(ctx, {.tokens = 67, .vocab = 1000, .hidden = 160, .quant = f, .pad = 1}, seed++);
        EXPECT_GT(dispatches, 1u);
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST_F(EmbeddingQuant, BadTablesAreRefusedNamingTheTensor) {
    auto expect_error = [](auto&& fn, const std::string& needle) {
        try {
            fn();
            ADD_FAILURE() << "no error; expected '" << needle << "'";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    // ids [4], table q4_0 [10, 64]: 32 value bytes and 2 scales a row.
    Buffer ids = ctx().create_buffer(4 * 4, MemoryKind::Device, "ids");
    Buffer v = ctx().create_buffer(10 * 32, MemoryKind::Device, "values");
    Buffer s = ctx().create_buffer(10 * 2 * 2, MemoryKind::Device, "scales");
    Buffer out = ctx().create_buffer(4 * 4 * 64, MemoryKind::Device, "out");
    auto list = ctx().command_list();
    const EmbeddingArgs ok{.ids = whole(ids),
                           .table = whole(v),
                           .out = whole(out),
                           .tokens = 4,
                           .vocab = 10,
                           .hidden = 64,
                           .quant = QuantFormat::Q4_0,
                           .scales = whole(s)};
    EXPECT_NO_THROW(record_embedding(ctx(), *list, ok));
    EmbeddingArgs bad = ok;
    bad.hidden = 48;
    expect_error([&] { record_embedding(ctx(), *list, bad); }, "whole blocks of 32; hidden = 48");
    bad = ok;
    bad.quant = QuantFormat::Q8_0;
    expect_error([&] { record_embedding(ctx(), *list, bad); }, "table values [10, 64] bytes (q8_0)");
    bad = ok;
    bad.scales = BufferRange{.buffer = &s, .offset = 0, .size = 36};
    expect_error([&] { record_embedding(ctx(), *list, bad); }, "table scales [10, 2] f16 (q4_0) needs a range of 40");
}

}  // namespace
}  // namespace vkf::test
