// Device selection, limits and their overrides, the quirk table's matching rules, and
// pipelines whose C++ side does not match their shader or the device.

#include "host/ops/elementwise.hpp"
#include "shaders/variants.hpp"
#include "tests/support/vulkan_test.hpp"

namespace vkf::test {
namespace {

template <class Fn>
void expect_error(Fn&& fn, const std::string& needle) {
    try {
        fn();
        ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

TEST(DeviceSelection, BadSelectorsNameTheDevices) {
    MessageSink sink;
    ContextOptions by_name = test_options(sink);
    by_name.device = "no-such-gpu-xyz";
    expect_error([&] { Context c(by_name); }, "no device name contains 'no-such-gpu-xyz'");
    ContextOptions by_index = test_options(sink);
    by_index.device = "99";
    expect_error([&] { Context c(by_index); }, "no usable device with that index");
}

TEST(DeviceSelection, SelectsByIndexNameAndType) {
    std::vector<DeviceInfo> devices(3);
    devices[0].name = "llvmpipe (LLVM 15)";
    devices[0].type = DeviceType::Cpu;
    devices[1].name = "Integrated Thing";
    devices[1].type = DeviceType::IntegratedGpu;
    devices[2].name = "Big Discrete";
    devices[2].type = DeviceType::DiscreteGpu;
    for (std::uint32_t i = 0; i < 3; ++i) {
        devices[i].index = i;
        devices[i].api_version = VK_API_VERSION_1_3;
        devices[i].compute_queue_family = 0;
    }
    EXPECT_EQ(select_device(devices, ""), 2u);
    EXPECT_EQ(select_device(devices, "1"), 1u);
    EXPECT_EQ(select_device(devices, "LLVMPIPE"), 0u);
    devices[2].compute_queue_family = UINT32_MAX;  // no compute queue: never chosen
    EXPECT_EQ(select_device(devices, ""), 1u);
    EXPECT_THROW((void)select_device(devices, "2"), Error);
}

TEST(DeviceSelection, TheSelectedDeviceReportsItsFields) {
    MessageSink sink;
    Context ctx(test_options(sink));
    const DeviceInfo& d = ctx.device_info();
    EXPECT_FALSE(d.name.empty());
    EXPECT_GE(d.api_version, VK_API_VERSION_1_1);
    EXPECT_GT(d.subgroup_size, 0u);
    EXPECT_GE(d.max_shared_memory, 16384u);  // Vulkan's guaranteed minimum
    EXPECT_GE(d.max_push_constants, 128u);
    EXPECT_GE(d.max_workgroup_invocations, 128u);
    EXPECT_GE(d.max_storage_buffer_range, 1u << 27);
    EXPECT_FALSE(d.memory_heaps.empty());
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(Limits, ByteSizesTakeBinarySuffixes) {
    EXPECT_EQ(parse_byte_size("512"), 512u);
    EXPECT_EQ(parse_byte_size("64K"), 65536u);
    EXPECT_EQ(parse_byte_size("128m"), 128ull << 20);
    EXPECT_EQ(parse_byte_size("2G"), 2ull << 30);
    for (const char* bad : {"", "K", "0", "-1", "1.5M", "12T", "1 M", "99999999999G"}) {
        EXPECT_EQ(parse_byte_size(bad), std::nullopt) << bad;
    }
}

TEST(Limits, OverridesParseAndOnlyLower) {
    const auto o = LimitOverrides::parse("shared_memory=8K,storage_buffer_range=1M,no_fp16_arithmetic");
    EXPECT_EQ(o.shared_memory, 8192u);
    EXPECT_EQ(o.storage_buffer_range, 1u << 20);
    EXPECT_TRUE(o.no_fp16_arithmetic);
    EXPECT_EQ(LimitOverrides::parse("phone").shared_memory, 16384u);
    expect_error([] { (void)LimitOverrides::parse("shared_memory=abc"); }, "not a positive integer");
    expect_error([] { (void)LimitOverrides::parse("warp_speed=9"); }, "unknown limit override 'warp_speed=9'");
    expect_error([] { (void)LimitOverrides::parse("shared_memory"); }, "needs a value");

    DeviceInfo info;
    info.max_shared_memory = 32768;
    info.max_workgroup_invocations = 1024;
    info.max_workgroup_size = {1024, 1024, 64};
    info.max_workgroup_count = {65535, 65535, 65535};
    info.max_push_constants = 256;
    info.max_storage_buffer_range = 1ull << 27;
    info.storage_16bit = info.float16_arithmetic = true;
    const auto forced = effective_limits(info, {}, LimitOverrides::parse("shared_memory=1M,workgroup_invocations=64"));
    EXPECT_EQ(forced.shared_memory, 32768u);  // an override never raises a limit
    EXPECT_EQ(forced.workgroup_invocations, 64u);
    EXPECT_EQ(forced.workgroup_size[0], 64u);
    EXPECT_TRUE(forced.forced);
    EXPECT_TRUE(forced.fp16_arithmetic);
    EXPECT_FALSE(effective_limits(info, {}, LimitOverrides::parse("no_fp16_arithmetic")).fp16_arithmetic);
    DriverQuirks quirks;
    quirks.avoid_fp16_arithmetic = true;
    EXPECT_FALSE(effective_limits(info, quirks, {}).fp16_arithmetic);

    // no_integer_dot turns off the quantized matmul's integer dot-product path.
    info.integer_dot_product = true;
    EXPECT_TRUE(effective_limits(info, {}, {}).integer_dot_product);
    const auto no_dot = effective_limits(info, {}, LimitOverrides::parse("no_integer_dot"));
    EXPECT_FALSE(no_dot.integer_dot_product);
    EXPECT_TRUE(no_dot.forced);
    EXPECT_EQ(LimitOverrides::parse("no_integer_dot").describe(), "no_integer_dot");
    EXPECT_TRUE(LimitOverrides{}.merged_with(LimitOverrides::parse("no_integer_dot")).no_integer_dot);
    EXPECT_FALSE(LimitOverrides::parse("no_integer_dot").empty());
}

TEST(DeviceSelection, IntegerDotProductIsEnabledWhereReported) {
    MessageSink sink;
    Context ctx(test_options(sink));
    EXPECT_EQ(ctx.device().enabled().integer_dot_product, ctx.device_info().integer_dot_product);
    EXPECT_TRUE(!ctx.limits().integer_dot_product || ctx.device_info().integer_dot_product);
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(Quirks, TableMatchesOnIdsAndVersionRanges) {
    DeviceInfo info;
    info.vendor_id = 0x13B5;
    info.device_id = 0x1234;
    info.driver_id = 9;
    info.driver_version = 500;
    const std::vector<QuirkEntry> table{
        {.vendor_id = 0x13B5, .max_driver_version = 499, .avoid_fp16_arithmetic = true, .reason = "old"},
        {.vendor_id = 0x13B5,
         .device_id = 0x1234,
         .min_driver_version = 500,
         .avoid_subgroup_ops = true,
         .reason = "this one"},
        {.vendor_id = 0x5143, .avoid_fp16_arithmetic = true, .reason = "other vendor"},
    };
    const DriverQuirks q = quirks_for(info, table);
    EXPECT_FALSE(q.avoid_fp16_arithmetic);
    EXPECT_TRUE(q.avoid_subgroup_ops);
    ASSERT_EQ(q.reasons.size(), 1u);
    EXPECT_EQ(q.reasons[0], "this one");
}

class Pipelines : public VulkanTest {};

TEST_F(Pipelines, AreCreatedOncePerKeyAndReused) {
    const PipelineDesc desc{.code = &shaders::variant("elementwise", {"OP_FILL"}),
                            .workgroup_size = {32, 1, 1},
                            .push_constant_layout = ElementwisePush::layout,
                            .binding_count = 1};
    const std::size_t before = ctx().pipeline_count();
    const Pipeline& a = ctx().pipeline(desc);
    const Pipeline& b = ctx().pipeline(desc);
    EXPECT_EQ(&a, &b);
    PipelineDesc other = desc;
    other.workgroup_size = {16, 1, 1};
    EXPECT_NE(&ctx().pipeline(other), &a);
    EXPECT_EQ(ctx().pipeline_count(), before + 2);
}

TEST_F(Pipelines, MismatchesWithTheShaderOrTheDeviceAreRefused) {
    const PipelineDesc good{.code = &shaders::variant("elementwise", {"OP_ADD"}),
                            .workgroup_size = {64, 1, 1},
                            .push_constant_layout = ElementwisePush::layout,
                            .binding_count = 3};
    auto with = [&](auto change) {
        PipelineDesc d = good;
        change(d);
        return d;
    };
    expect_error([&] { ctx().pipeline(with([](PipelineDesc& d) { d.push_constant_layout.size = 12; })); },
                 "push-constant block is 8 bytes but the C++ side declares 12");
    expect_error([&] { ctx().pipeline(with([](PipelineDesc& d) { d.binding_count = 2; })); },
                 "has 3 storage buffers but the C++ side declares 2");
    expect_error(
        [&] {
            ctx().pipeline(with([&](PipelineDesc& d) { d.shared_memory_bytes = ctx().limits().shared_memory + 4; }));
        },
        "bytes of shared memory");
    expect_error(
        [&] {
            ctx().pipeline(with([&](PipelineDesc& d) { d.workgroup_size = {ctx().limits().workgroup_size[0], 2, 1}; }));
        },
        "invocations per workgroup");
    expect_error([&] { ctx().pipeline(with([](PipelineDesc& d) { d.constants = {{1, 5}}; })); }, "workgroup size");
}

TEST(PipelinesForcedLimits, SharedMemoryIsCheckedAgainstTheForcedLimit) {
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides{.shared_memory = 4096}));
    expect_error(
        [&] {
            ctx.pipeline(PipelineDesc{.code = &shaders::variant("elementwise", {"OP_FILL"}),
                                      .push_constant_layout = ElementwisePush::layout,
                                      .binding_count = 1,
                                      .shared_memory_bytes = 8192});
        },
        "allows 4096");
}

}  // namespace
}  // namespace vkf::test
