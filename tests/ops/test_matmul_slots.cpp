// KV writes through slot mappings on the separate passes' side (KvAppendArgs::slots): the
// matmul's QKV scatter places K and V at the slots (test_matmul_fused), and where the plan
// refuses the scatter the projection's output is appended by record_kv_append with the same
// slots. Rows are written at a random choice of cache rows in random order, from dense and
// fused-QKV source layouts, into fp32 and fp16 caches, over head sizes on and off the tuned
// table; the cache starts random and rows no slot names must come back bit for bit. One
// recorded list is submitted again with new slots, one of them past the cache (a padding
// row, which writes nothing).

#include "host/ops/device_tensor.hpp"
#include "host/ops/kv_append.hpp"
#include "host/reference/ops.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

namespace vkf::test {
namespace {

class KvAppendSlots : public VulkanTest {};

std::vector<std::uint32_t> random_slots(std::uint32_t count, std::uint32_t capacity, std::uint64_t seed) {
    std::vector<std::uint32_t> rows(capacity);
    std::iota(rows.begin(), rows.end(), 0u);
    std::mt19937_64 engine(seed);
    std::shuffle(rows.begin(), rows.end(), engine);
    rows.resize(count);
    return rows;
}

std::vector<float> rounded(DType dtype, std::vector<float> v) {
    if (dtype == DType::F16) {
        for (float& e : v)
            e = half_to_float(float_to_half(e));
    }
    return v;
}

struct SlotCase {
    std::uint32_t new_len, max_len, heads, head_dim;
    DType dtype;
    // The source: dense [new_len, heads, head_dim], or the K part of MPT's per-token [q | k | v].
    bool fused_source = false;
};

void run_slots(Context& ctx, const SlotCase& c, std::uint64_t seed) {
    SCOPED_TRACE("new_len " + std::to_string(c.new_len) + " max_len " + std::to_string(c.max_len) + " heads " +
                 std::to_string(c.heads) + " d " + std::to_string(c.head_dim) + " " + to_string(c.dtype) +
                 (c.fused_source ? " fused source" : " dense source"));
    const std::uint32_t row = c.heads * c.head_dim;
    const HeadLayout layout = c.fused_source ? HeadLayout{.offset = row,
                                                          .batch_stride = std::uint64_t{c.new_len} * 3 * row,
                                                          .token_stride = 3 * row,
                                                          .head_stride = c.head_dim}
                                             : HeadLayout::dense(c.new_len, c.heads, c.head_dim);
    const std::size_t src_n = std::size_t{c.new_len} * (c.fused_source ? 3 * row : row);
    const auto src = random_uniform(src_n, seed, -3.0f, 3.0f);
    const DeviceTensor sb = upload_tensor(ctx, src, DType::F32, "src", 1);
    const DeviceTensor cache =
        upload_tensor(ctx, random_uniform(std::size_t{c.max_len} * row, seed + 1, -1.0f, 1.0f), c.dtype, "cache");
    std::vector<std::uint32_t> slots = random_slots(c.new_len, c.max_len, seed + 2);
    const DeviceTensor slot_buffer = upload_words(ctx, slots, "slots", 3);
    const KvAppendArgs args{.src = sb.range(),
                            .src_layout = layout,
                            .cache = cache.range(),
                            .shape = {.batch = 1,
                                      .new_len = c.new_len,
                                      .n_kv_head = c.heads,
                                      .head_dim = c.head_dim,
                                      .max_len = c.max_len,
                                      .pos = c.max_len},  // ignored with slots (else past the cache)
                            .cache_dtype = c.dtype,
                            .slots = slot_buffer.range()};
    auto list = ctx.command_list();
    record_kv_append(ctx, *list, args);
    for (int round = 0; round < 2; ++round) {
        SCOPED_TRACE("submission " + std::to_string(round + 1));
        if (round == 1) {
            slots = random_slots(c.new_len, c.max_len, seed + 3);
            if (c.new_len > 1) {
                slots.front() = 0xFFFFFFFFu;  // a padding row
            }
            ctx.upload(slot_buffer.buffer(), std::span<const std::uint32_t>(slots), 3 * sizeof(std::uint32_t));
        }
        const std::vector<float> before = download_tensor(ctx, cache);
        ctx.submit(*list);
        // The reference appends each row at its slot alone.
        std::vector<double> expected(before.begin(), before.end());
        for (std::uint32_t t = 0; t < c.new_len; ++t) {
            if (slots[t] >= c.max_len) {
                continue;
            }
            HeadLayout one = layout;
            one.offset += t * layout.token_stride;
            const std::vector<float> as_floats(expected.begin(), expected.end());
            expected = reference::kv_append(as_floats, rounded(c.dtype, src), one,
                                            {.batch = 1,
                                             .new_len = 1,
                                             .n_kv_head = c.heads,
                                             .head_dim = c.head_dim,
                                             .max_len = c.max_len,
                                             .pos = slots[t]});
        }
        const std::vector<float> out = download_tensor(ctx, cache);
        std::size_t written = 0;
        for (std::size_t i = 0; i < out.size(); ++i) {
            const auto r = static_cast<std::uint32_t>(i / row);
            const bool named = std::find(slots.begin(), slots.end(), r) != slots.end();
            written += named ? 1 : 0;
            // A copy (fp16: one rounding) is exact; rows no slot names keep their bits.
            const float want = named ? static_cast<float>(expected[i]) : before[i];
            ASSERT_EQ(std::memcmp(&out[i], &want, sizeof(float)), 0)
                << "cache element " << i << " (row " << r << (named ? ", named" : ", not named") << "): " << out[i]
                << " != " << want;
        }
        EXPECT_EQ(written, std::size_t{row} * (c.new_len - (round == 1 && c.new_len > 1 ? 1 : 0)));
    }
}

TEST_F(KvAppendSlots, RowsLandAtTheirSlots) {
    std::uint64_t seed = 700;
    for (const DType t : {DType::F32, DType::F16}) {
        // 64, and head sizes off the attention's tuned table: 4n + 2 and MPT-30B's 112.
        for (const std::uint32_t d : {64u, 6u, 112u}) {
            run_slots(ctx(), {.new_len = 5, .max_len = 17, .heads = 3, .head_dim = d, .dtype = t}, seed++);
        }
        run_slots(ctx(), {.new_len = 1, .max_len = 4, .heads = 2, .head_dim = 18, .dtype = t}, seed++);
        run_slots(ctx(), {.new_len = 7, .max_len = 7, .heads = 12, .head_dim = 16, .dtype = t, .fused_source = true},
                  seed++);
    }
}

TEST_F(KvAppendSlots, BadSlotsAreRefused) {
    const DeviceTensor src = nan_tensor(ctx(), 4 * 64, DType::F32, "src");
    const DeviceTensor cache = nan_tensor(ctx(), 8 * 64, DType::F32, "cache");
    const std::uint32_t rows[] = {3, 1, 0};
    const DeviceTensor slots = upload_words(ctx(), rows, "slots");
    auto list = ctx().command_list();
    KvAppendArgs a{.src = src.range(),
                   .src_layout = HeadLayout::dense(2, 1, 64),
                   .cache = cache.range(),
                   .shape = {.batch = 2, .new_len = 2, .n_kv_head = 1, .head_dim = 64, .max_len = 8},
                   .slots = BufferRange{.buffer = &slots.buffer(), .offset = 0, .size = 8}};
    // The slots place one sequence's rows: batch 1.
    EXPECT_NE(error_message([&] { record_kv_append(ctx(), *list, a); }).find("batch"), std::string::npos);
    a.shape.batch = 1;
    a.slots = slots.range();  // three slots for two rows
    EXPECT_NE(error_message([&] { record_kv_append(ctx(), *list, a); }).find("slots"), std::string::npos);
    EXPECT_EQ(list->op_count(), 0u);
    a.slots.size = 8;
    EXPECT_NO_THROW(record_kv_append(ctx(), *list, a));
    EXPECT_EQ(list->op_count(), 1u);
}

}  // namespace
}  // namespace vkf::test
