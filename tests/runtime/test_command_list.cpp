// The recorder: barriers from hazards (and none without), re-submission, group counts over
// the device limit, timestamps, and dispatches that do not match their pipeline.

#include "host/ops/elementwise.hpp"
#include "shaders/variants.hpp"
#include "tests/support/vulkan_test.hpp"

#include <bit>
#include <cmath>

namespace vkf::test {
namespace {

class CommandLists : public VulkanTest {};

std::vector<float> download_floats(Context& ctx, const Buffer& b) {
    std::vector<float> out(b.size() / 4);
    ctx.download(b, std::span(out));
    return out;
}

TEST_F(CommandLists, DependentChainIsRightAndGetsOneBarrierPerHazard) {
    // x0 = 1; x_{k+1} = x_k + x_k ping-ponging between two buffers: every step reads what the
    // previous one wrote (read-after-write) and overwrites what it read (write-after-read).
    const std::uint32_t n = 100003;  // prime, not a multiple of the workgroup size
    Buffer a = ctx().create_buffer(n * 4, MemoryKind::Device, "a");
    Buffer b = ctx().create_buffer(n * 4, MemoryKind::Device, "b");
    auto list = ctx().command_list();
    record_fill(ctx(), *list, whole(b), 0xFFFFFFFFu);  // poison
    record_fill(ctx(), *list, whole(a), 1.0f);
    const int steps = 20;
    for (int k = 0; k < steps; ++k) {
        const Buffer& src = k % 2 == 0 ? a : b;
        const Buffer& dst = k % 2 == 0 ? b : a;
        record_add(ctx(), *list, whole(src), whole(src), whole(dst));
    }
    ctx().submit(*list);
    // fill(b), fill(a) are independent; each add depends on the previous op.
    EXPECT_EQ(list->barrier_count(), static_cast<std::size_t>(steps));
    const auto out = download_floats(ctx(), steps % 2 == 0 ? a : b);
    for (std::uint32_t i = 0; i < n; ++i) {
        ASSERT_EQ(out[i], std::ldexp(1.0f, steps)) << "element " << i;
    }
}

TEST_F(CommandLists, IndependentDispatchesGetNoBarrier) {
    Buffer a = ctx().create_buffer(4096, MemoryKind::Device, "a");
    Buffer b = ctx().create_buffer(4096, MemoryKind::Device, "b");
    auto list = ctx().command_list();
    record_fill(ctx(), *list, whole(a), 1u);
    record_fill(ctx(), *list, whole(b), 2u);
    // Disjoint halves of one buffer do not conflict either.
    record_fill(ctx(), *list, BufferRange{&a, 0, 2048}, 3u);
    record_fill(ctx(), *list, BufferRange{&a, 2048, 2048}, 4u);
    ctx().submit(*list);
    // fill(a) then fill(a halves) is write-after-write: exactly one barrier.
    EXPECT_EQ(list->barrier_count(), 1u);
    std::vector<std::uint32_t> out(1024);
    ctx().download(a, std::span(out));
    EXPECT_EQ(out[0], 3u);
    EXPECT_EQ(out[1023], 4u);
}

TEST_F(CommandLists, ResubmissionRunsTheRecordedWorkAgain) {
    const std::uint32_t n = 4097;
    Buffer acc = ctx().create_buffer(n * 4, MemoryKind::Device, "acc");
    Buffer one = ctx().create_buffer(n * 4, MemoryKind::Device, "one");
    auto init = ctx().command_list();
    record_fill(ctx(), *init, whole(acc), 0.0f);
    record_fill(ctx(), *init, whole(one), 1.0f);
    ctx().submit(*init);

    auto step = ctx().command_list();
    record_add(ctx(), *step, whole(acc), whole(one), whole(acc));  // in place
    for (int i = 0; i < 5; ++i) {
        ctx().submit(*step);
    }
    const auto out = download_floats(ctx(), acc);
    for (std::uint32_t i = 0; i < n; ++i) {
        ASSERT_EQ(out[i], 5.0f) << "element " << i;
    }
}

TEST(CommandListsLimits, GroupCountsOverTheDeviceLimitAreSplit) {
    MessageSink sink;
    LimitOverrides tiny{.workgroup_count = 7};
    Context ctx(test_options(sink, tiny));
    ASSERT_EQ(ctx.limits().workgroup_count[0], 7u);
    const std::uint32_t n = 100 * 256 + 5;  // 101 groups of 256 > 7 (201 of 128 under spec_minimum)
    const std::uint32_t groups =
        (n + std::min(256u, ctx.limits().workgroup_size[0]) - 1) / std::min(256u, ctx.limits().workgroup_size[0]);
    Buffer b = ctx.create_buffer(n * 4, MemoryKind::Device, "b");
    auto list = ctx.command_list();
    record_fill(ctx, *list, whole(b), 0x12345678u);
    ctx.submit(*list);
    EXPECT_EQ(list->dispatch_command_count(), (groups + 6) / 7);  // ceil(101 / 7) = 15
    std::vector<std::uint32_t> out(n);
    ctx.download(b, std::span(out));
    for (std::uint32_t i = 0; i < n; ++i) {
        ASSERT_EQ(out[i], 0x12345678u) << "element " << i;
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST_F(CommandLists, ProfilingGivesATimePerOp) {
    if (!ctx().limits().timestamps) {
        GTEST_SKIP() << "device has no timestamps";
    }
    Buffer b = ctx().create_buffer(1 << 22, MemoryKind::Device, "b");
    auto list = ctx().command_list(true);
    record_fill(ctx(), *list, whole(b), 1.0f);
    record_add(ctx(), *list, whole(b), whole(b), whole(b));
    ctx().submit(*list);
    const auto t = list->timings();
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t[0].label, "fill");
    EXPECT_EQ(t[1].label, "add");
    for (const auto& op : t) {
        EXPECT_GT(op.ms, 0.0);
        EXPECT_LT(op.ms, 60000.0);
    }
    auto plain = ctx().command_list();
    EXPECT_THROW((void)plain->timings(), Error);
}

TEST_F(CommandLists, MismatchedDispatchesAreRefusedWithAMessage) {
    Buffer b = ctx().create_buffer(1024, MemoryKind::Device, "b");
    const Pipeline& fill = ctx().pipeline(PipelineDesc{.code = &shaders::variant("elementwise", {"OP_FILL"}),
                                                       .workgroup_size = {64, 1, 1},
                                                       .push_constant_layout = ElementwisePush::layout,
                                                       .binding_count = 1});
    auto list = ctx().command_list();
    const Binding one[] = {{whole(b), Access::Write}};
    const std::uint32_t short_block = 7;
    auto expect_error = [](auto&& fn, const char* needle) {
        try {
            fn();
            ADD_FAILURE() << "accepted; expected an error mentioning '" << needle << "'";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    expect_error(
        [&] {
            list->dispatch(Dispatch{.pipeline = &fill,
                                    .bindings = one,
                                    .push_constants = push_bytes(short_block),
                                    .groups = {1, 1, 1},
                                    .label = "short-push"});
        },
        "push-constant block of 4 bytes");
    const ElementwisePush push{.count = 256, .value = 0};
    expect_error(
        [&] {
            list->dispatch(Dispatch{.pipeline = &fill,
                                    .bindings = {},
                                    .push_constants = push_bytes(push),
                                    .groups = {1, 1, 1},
                                    .label = "no-buffers"});
        },
        "0 buffers bound");
    expect_error(
        [&] {
            const Binding outside[] = {{BufferRange{&b, 512, 1024}, Access::Write}};
            list->dispatch(Dispatch{.pipeline = &fill,
                                    .bindings = outside,
                                    .push_constants = push_bytes(push),
                                    .groups = {1, 1, 1},
                                    .label = "outside"});
        },
        "outside the buffer");
    expect_error(
        [&] {
            const Binding misaligned[] = {{BufferRange{&b, 2, 64}, Access::Write}};
            list->dispatch(Dispatch{.pipeline = &fill,
                                    .bindings = misaligned,
                                    .push_constants = push_bytes(push),
                                    .groups = {1, 1, 1},
                                    .label = "misaligned"});
        },
        "minStorageBufferOffsetAlignment");
    expect_error(
        [&] {
            list->dispatch(Dispatch{.pipeline = &fill,
                                    .bindings = one,
                                    .push_constants = push_bytes(push),
                                    .groups = {0, 1, 1},
                                    .label = "zero"});
        },
        "zero workgroups");
    EXPECT_EQ(list->op_count(), 0u);
}

}  // namespace
}  // namespace vkf::test
