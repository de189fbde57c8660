// Buffer round trips from 1 byte to 256 MiB in total, through mapped memory and through the
// staging path, and buffers larger than maxStorageBufferRange.

#include "host/ops/elementwise.hpp"
#include "shaders/variants.hpp"
#include "tests/support/vulkan_test.hpp"

#include <cstring>

namespace vkf::test {
namespace {

class Buffers : public VulkanTest {};

void round_trip(Context& ctx, VkDeviceSize size, MemoryKind kind, std::uint64_t seed) {
    SCOPED_TRACE("size " + std::to_string(size));
    const auto words = random_words((size + 3) / 4, seed);
    const auto bytes = std::as_bytes(std::span(words)).first(size);
    Buffer buffer = ctx.create_buffer(size, kind, "round-trip");
    ctx.upload(buffer, bytes);
    std::vector<std::byte> back(size, std::byte{0xAB});
    ctx.download(buffer, back);
    ASSERT_EQ(std::memcmp(back.data(), bytes.data(), size), 0);
    // A sub-range at an odd offset.
    if (size > 3) {
        std::vector<std::byte> part(size - 3);
        ctx.download(buffer, part, 3);
        ASSERT_EQ(std::memcmp(part.data(), bytes.data() + 3, size - 3), 0);
    }
}

TEST_F(Buffers, RoundTripsFromOneByteTo256MiB) {
    // Sizes add up to 256 MiB (plus the small ones); several buffers are alive at once.
    const VkDeviceSize sizes[] = {1, 3, 4, 255, 4096, (1 << 20) + 7, 63ull << 20, 64ull << 20, 128ull << 20};
    std::uint64_t seed = 1;
    for (VkDeviceSize s : sizes) {
        round_trip(ctx(), s, MemoryKind::Device, seed++);
    }
    round_trip(ctx(), 12345, MemoryKind::Host, seed++);
    std::vector<Buffer> alive;
    for (VkDeviceSize s : sizes) {
        alive.push_back(ctx().create_buffer(s, MemoryKind::Device, "alive"));
    }
    EXPECT_GE(ctx().memory_stats().buffer_bytes, 255ull << 20);
    // Small buffers share blocks: far fewer VkDeviceMemory objects than buffers.
    std::vector<Buffer> small;
    for (int i = 0; i < 200; ++i) {
        small.push_back(ctx().create_buffer(1000 + i, MemoryKind::Device, "small"));
    }
    EXPECT_LT(ctx().memory_stats().block_count, 20u);
}

TEST(BuffersStaged, RoundTripsThroughTheStagingBuffer) {
    MessageSink sink;
    ContextOptions options = test_options(sink);
    options.force_staging = true;
    std::uint64_t seed = 100;
    // Several chunks per transfer; uploads alternate between the staging buffer's halves
    // (odd halves too: copies need no alignment).
    for (const VkDeviceSize staging : {VkDeviceSize{1} << 20, (VkDeviceSize{1} << 20) + 7}) {
        options.staging_size = staging;
        Context ctx(options);
        for (VkDeviceSize s :
             {VkDeviceSize{1}, VkDeviceSize{4093}, VkDeviceSize{1 << 20}, VkDeviceSize{(5 << 20) + 1}}) {
            round_trip(ctx, s, MemoryKind::Device, seed++);
        }
    }
    EXPECT_EQ(sink.validation_count(), 0u);
    options.staging_size = 8;
    EXPECT_THROW(Context{options}, Error);
}

TEST_F(Buffers, OutOfRangeTransfersAreRefused) {
    Buffer b = ctx().create_buffer(16, MemoryKind::Device, "small");
    std::vector<std::byte> bytes(17);
    EXPECT_THROW(ctx().upload(b, std::span<const std::byte>(bytes)), Error);
    EXPECT_THROW(ctx().download(b, std::span(bytes).first(8), 9), Error);
    EXPECT_THROW((void)ctx().create_buffer(0, MemoryKind::Device, "empty"), Error);
}

TEST_F(Buffers, BindingOverMaxStorageBufferRangeIsRefusedAndRangesWork) {
    const VkDeviceSize range = ctx().limits().storage_buffer_range;
    const VkDeviceSize size = range + (range / 4);  // 1.25x the limit
    Buffer big = ctx().create_buffer(size, MemoryKind::Device, "big");

    // Binding the whole buffer names the limit.
    auto list = ctx().command_list();
    const Pipeline& p = ctx().pipeline(PipelineDesc{.code = &shaders::variant("elementwise", {"OP_FILL"}),
                                                    .workgroup_size = {64, 1, 1},
                                                    .push_constant_layout = ElementwisePush::layout,
                                                    .binding_count = 1});
    const Binding whole_binding[] = {{whole(big), Access::Write}};
    const ElementwisePush push{.count = 1, .value = 0};
    try {
        list->dispatch(Dispatch{.pipeline = &p,
                                .bindings = whole_binding,
                                .push_constants = push_bytes(push),
                                .groups = {1, 1, 1},
                                .label = "too-big"});
        FAIL() << "binding over maxStorageBufferRange was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("maxStorageBufferRange"), std::string::npos) << e.what();
    }

    // The elementwise ops bind it in ranges.
    auto fill = ctx().command_list();
    record_fill(ctx(), *fill, whole(big), 0xC0FFEEu);
    ctx().submit(*fill);
    EXPECT_GE(fill->op_count(), 2u);
    std::vector<std::uint32_t> back(size / 4);
    ctx().download(big, std::span(back));
    std::size_t wrong = 0;
    for (auto w : back) {
        wrong += w != 0xC0FFEEu;
    }
    EXPECT_EQ(wrong, 0u);
}

}  // namespace
}  // namespace vkf::test
