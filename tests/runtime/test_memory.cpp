// Device memory budgets and small device-local heaps (runtime/memory.hpp): the budget a
// Context reports, MemoryKind::Device buffers falling back to host-visible memory once a forced
// device-local size (VKF_LIMITS device_heap) is used up, the ops on such buffers still right
// (through mapped memory and through the staging buffer), and forced sizes as hard limits.

#include "host/ops/device_tensor.hpp"
#include "host/ops/elementwise.hpp"
#include "host/util/random.hpp"
#include "tests/support/vulkan_test.hpp"

#include <numeric>

namespace vkf::test {
namespace {

class Memory : public VulkanTest {};

std::uint64_t total_usage(const MemoryBudget& b) {
    return std::accumulate(b.heaps.begin(), b.heaps.end(), std::uint64_t{0},
                           [](std::uint64_t sum, const HeapBudget& h) { return sum + h.usage; });
}

TEST_F(Memory, TheBudgetDescribesTheHeapsAndFollowsAllocations) {
    const MemoryBudget before = ctx().memory_budget();
    ASSERT_EQ(before.heaps.size(), ctx().device_info().memory_heaps.size());
    EXPECT_EQ(before.from_extension, ctx().device_info().memory_budget);
    EXPECT_EQ(before.source(), before.from_extension ? "VK_EXT_memory_budget" : "heap sizes");
    bool device_local = false;
    for (std::size_t h = 0; h < before.heaps.size(); ++h) {
        const HeapBudget& heap = before.heaps[h];
        SCOPED_TRACE("heap " + std::to_string(h));
        EXPECT_EQ(heap.index, h);
        EXPECT_EQ(heap.size, ctx().device_info().memory_heaps[h].size);
        EXPECT_EQ(heap.device_local, ctx().device_info().memory_heaps[h].device_local);
        EXPECT_EQ(heap.host_visible, ctx().device_info().memory_heaps[h].host_visible);
        EXPECT_GT(heap.budget, 0u);
        EXPECT_LE(heap.budget, heap.size);  // VK_EXT_memory_budget promises it; the size itself otherwise
        device_local |= heap.device_local;
    }
    EXPECT_TRUE(device_local);
    EXPECT_GT(before.device_local_available, 64ull << 20);
    EXPECT_EQ(before.available(), before.device_local_available + before.host_visible_available);

    // A buffer of its own block (over half a block) takes its bytes off what is left.
    constexpr VkDeviceSize kBig = 48ull << 20;
    const Buffer big = ctx().create_buffer(kBig, MemoryKind::Device, "big");
    EXPECT_FALSE(big.host_visible_fallback());
    const MemoryBudget after = ctx().memory_budget();
    if (!after.from_extension) {
        // Without the extension the usage is vkformer's own blocks, exactly.
        EXPECT_EQ(total_usage(after), ctx().memory_stats().block_bytes);
        EXPECT_LE(after.device_local_available + kBig, before.device_local_available);
    }
    EXPECT_EQ(ctx().memory_stats().fallback_buffer_count, 0u);
    EXPECT_TRUE(ctx().memory_stats().note.empty());
}

TEST(MemoryOverrides, DeviceAndHostHeapSizesParseAndMerge) {
    const LimitOverrides o = LimitOverrides::parse("device_heap=4M,host_heap=1G");
    EXPECT_EQ(o.device_heap, 4ull << 20);
    EXPECT_EQ(o.host_heap, 1ull << 30);
    EXPECT_FALSE(o.empty());
    EXPECT_EQ(o.describe(), "device_heap=4194304,host_heap=1073741824");
    const LimitOverrides merged = o.merged_with(LimitOverrides::parse("device_heap=8M"));
    EXPECT_EQ(merged.device_heap, 8ull << 20);
    EXPECT_EQ(merged.host_heap, 1ull << 30);
    EXPECT_THROW((void)LimitOverrides::parse("device_heap"), Error);
    EXPECT_THROW((void)LimitOverrides::parse("host_heap=lots"), Error);
}

// 3 MiB tensors under a 4 MiB device-local cap (blocks of 1 MiB, so each tensor has a block of
// its own): the first fits, the rest go to host-visible memory, and an add over the three is
// exact wherever they sit.
TEST(MemoryFallback, AForcedTinyDeviceHeapFallsBackToHostVisibleMemoryAndOpsStayRight) {
    constexpr std::size_t kElements = 3 << 18;  // 3 MiB of floats
    for (const bool staged : {false, true}) {
        SCOPED_TRACE(staged ? "through the staging buffer" : "through mapped memory");
        MessageSink sink;
        ContextOptions options = test_options(sink, LimitOverrides::parse("device_heap=4M"));
        options.force_staging = staged;
        Context ctx(options);
        const MemoryBudget fresh = ctx.memory_budget();
        EXPECT_EQ(fresh.device_local_available, 4u << 20);
        EXPECT_GE(fresh.host_visible_available, 16u << 20);  // the rest of a unified heap, or a host heap
        EXPECT_NE(fresh.source().find("device_heap=4194304"), std::string::npos) << fresh.source();

        const std::vector<float> a = random_uniform(kElements, 1, -4.0f, 4.0f);
        const std::vector<float> b = random_uniform(kElements, 2, -4.0f, 4.0f);
        const DeviceTensor da = upload_tensor(ctx, a, DType::F32, "a");
        {
            const DeviceTensor db = upload_tensor(ctx, b, DType::F32, "b");
            const DeviceTensor sum = nan_tensor(ctx, kElements, DType::F32, "sum");
            EXPECT_FALSE(da.buffer().host_visible_fallback());
            EXPECT_TRUE(db.buffer().host_visible_fallback());
            EXPECT_TRUE(sum.buffer().host_visible_fallback());
            const MemoryStats stats = ctx.memory_stats();
            EXPECT_LE(stats.device_local_block_bytes, 4u << 20);
            EXPECT_EQ(stats.fallback_buffer_count, 2u);
            EXPECT_EQ(stats.fallback_buffer_bytes, db.buffer().size() + sum.buffer().size());
            EXPECT_GE(stats.fallback_block_bytes, stats.fallback_buffer_bytes);
            EXPECT_NE(stats.note.find("buffer 'b'"), std::string::npos) << stats.note;
            EXPECT_NE(stats.note.find("device_heap=4194304"), std::string::npos) << stats.note;

            auto list = ctx.command_list();
            record_add(ctx, *list, da.range(), db.range(), sum.range());
            ctx.submit(*list);
            const std::vector<float> out = download_tensor(ctx, sum);
            std::size_t wrong = 0;
            for (std::size_t i = 0; i < kElements; ++i) {
                wrong += out[i] != a[i] + b[i];
            }
            EXPECT_EQ(wrong, 0u);
        }
        // Freed fallback buffers are counted off and their blocks given back.
        const MemoryStats after = ctx.memory_stats();
        EXPECT_EQ(after.fallback_buffer_count, 0u);
        EXPECT_EQ(after.fallback_buffer_bytes, 0u);
        EXPECT_EQ(after.fallback_block_bytes, 0u);
        EXPECT_FALSE(after.note.empty());  // the note stays: it happened in this context
        EXPECT_EQ(sink.validation_count(), 0u);
    }
}

TEST(MemoryFallback, ForcedSizesAreHardLimits) {
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("device_heap=2M,host_heap=2M")));
    const MemoryBudget budget = ctx.memory_budget();
    EXPECT_EQ(budget.device_local_available, 2u << 20);
    EXPECT_EQ(budget.host_visible_available, 2u << 20);
    const Buffer fits = ctx.create_buffer(1536 << 10, MemoryKind::Device, "fits");
    const Buffer falls_back = ctx.create_buffer(1536 << 10, MemoryKind::Device, "falls back");
    EXPECT_FALSE(fits.host_visible_fallback());
    EXPECT_TRUE(falls_back.host_visible_fallback());
    const std::string message =
        error_message([&] { (void)ctx.create_buffer(1536 << 10, MemoryKind::Device, "one too many"); });
    EXPECT_NE(message.find("'one too many'"), std::string::npos) << message;
    EXPECT_NE(message.find("host_heap=2097152"), std::string::npos) << message;
    EXPECT_EQ(sink.validation_count(), 0u);
}

}  // namespace
}  // namespace vkf::test
