// Device selection, limits and their overrides, and the quirk table's matching rules.
// Pipelines whose C++ side does not match their shader or the device: test_pipelines.

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
    // gpu_attention (attention planned as on a GPU) is no limit: parsed, merged, described.
    const auto gpu = LimitOverrides::parse("gpu_attention");
    EXPECT_TRUE(gpu.gpu_attention);
    EXPECT_FALSE(gpu.empty());
    EXPECT_EQ(gpu.describe(), "gpu_attention");
    EXPECT_TRUE(LimitOverrides{}.merged_with(gpu).gpu_attention);
    expect_error([] { (void)LimitOverrides::parse("gpu_attention=1"); }, "unknown limit override");
    const auto both = LimitOverrides::parse("gpu_matmul,gpu_attention");
    EXPECT_TRUE(both.gpu_matmul && both.gpu_attention && !gpu.gpu_matmul);
    EXPECT_EQ(both.describe(), "gpu_attention,gpu_matmul");
    EXPECT_TRUE(gpu.merged_with(LimitOverrides::parse("gpu_matmul")).gpu_matmul);
}

TEST(Limits, CooperativeMatricesOnlyWhereTheDeviceHasThemOrTheyAreEmulated) {
    const auto on = LimitOverrides::parse("coopmat,coopmat_emulated=16x8x16");
    EXPECT_TRUE(on.coopmat);
    EXPECT_FALSE(on.empty());
    EXPECT_EQ(on.describe(), "coopmat,coopmat_emulated=16x8x16");
    EXPECT_EQ(LimitOverrides::parse(on.describe()).describe(), on.describe());
    EXPECT_TRUE(LimitOverrides{}.merged_with(on).coopmat);
    expect_error([] { (void)LimitOverrides::parse("coopmat=1"); }, "unknown limit override");
    expect_error([] { (void)LimitOverrides::parse("coopmat_emulated=16x8"); }, "limit override 'coopmat_emulated'");

    DeviceInfo info;
    info.max_workgroup_invocations = 1024;
    info.float16_arithmetic = true;
    info.cooperative_matrix_shapes = {{16, 8, 16, true}, {16, 16, 16, false}};
    // Listed but not usable (no feature, memory model or fp16): none.
    EXPECT_TRUE(effective_limits(info, {}, {}).coopmat_shapes.empty());
    info.cooperative_matrix = true;
    const ComputeLimits l = effective_limits(info, {}, {});
    EXPECT_EQ(l.coopmat_shapes, (std::vector<CoopMatShape>{{16, 8, 16, true}}));  // fp32 accumulators only
    EXPECT_FALSE(l.prefer_coopmat);
    EXPECT_FALSE(l.coopmat_emulated);
    EXPECT_TRUE(effective_limits(info, {}, LimitOverrides::parse("coopmat")).prefer_coopmat);
    EXPECT_TRUE(effective_limits(info, {}, LimitOverrides::parse("no_fp16_arithmetic")).coopmat_shapes.empty());
    EXPECT_TRUE(effective_limits(info, {}, LimitOverrides::spec_minimum()).coopmat_shapes.empty());
    // The real ones win over an emulation; without them the emulated shape is there.
    EXPECT_FALSE(effective_limits(info, {}, on).coopmat_emulated);
    info.cooperative_matrix = false;
    const ComputeLimits emulated = effective_limits(info, {}, on);
    EXPECT_TRUE(emulated.coopmat_emulated);
    EXPECT_EQ(emulated.coopmat_shapes, (std::vector<CoopMatShape>{{16, 8, 16, true}}));
}

TEST(Limits, StorageBuffersComputeUnitsAndSubgroupSizeControl) {
    const auto o = LimitOverrides::parse("storage_buffers=4,compute_units=12,no_subgroup_size_control");
    EXPECT_EQ(o.storage_buffers, 4u);
    EXPECT_EQ(o.compute_units, 12u);
    EXPECT_TRUE(o.no_subgroup_size_control);
    EXPECT_FALSE(o.empty());
    EXPECT_EQ(o.describe(), "storage_buffers=4,compute_units=12,no_subgroup_size_control");
    EXPECT_EQ(LimitOverrides::parse(o.describe()).describe(), o.describe());
    const auto merged = LimitOverrides::parse("storage_buffers=8").merged_with(o);
    EXPECT_EQ(merged.storage_buffers, 4u);
    EXPECT_TRUE(merged.no_subgroup_size_control);
    EXPECT_EQ(LimitOverrides::phone().storage_buffers, 8u);
    expect_error([] { (void)LimitOverrides::parse("storage_buffers"); }, "needs a value");
    expect_error([] { (void)LimitOverrides::parse("compute_units=0"); }, "not a positive integer");
    expect_error([] { (void)LimitOverrides::parse("no_subgroup_size_control=1"); }, "unknown limit override");

    DeviceInfo info;
    info.max_per_stage_storage_buffers = 16;
    info.max_descriptor_set_storage_buffers = 12;
    info.subgroup_size = 32;
    info.min_subgroup_size = 8;
    info.max_subgroup_size = 32;
    info.subgroup_size_control = true;
    // One set, one stage: the lower of the two storage-buffer limits, lowered by the override.
    EXPECT_EQ(effective_limits(info, {}, {}).storage_buffers, 12u);
    const auto four = effective_limits(info, {}, LimitOverrides::parse("storage_buffers=4"));
    EXPECT_EQ(four.storage_buffers, 4u);
    EXPECT_TRUE(four.forced);
    EXPECT_EQ(effective_limits(info, {}, LimitOverrides::parse("storage_buffers=64")).storage_buffers, 12u);

    // Required subgroup sizes need full subgroups too, and the default size within range.
    EXPECT_FALSE(effective_limits(info, {}, {}).subgroup_size_control);
    info.compute_full_subgroups = true;
    EXPECT_TRUE(effective_limits(info, {}, {}).subgroup_size_control);
    const auto off = effective_limits(info, {}, LimitOverrides::parse("no_subgroup_size_control"));
    EXPECT_FALSE(off.subgroup_size_control);
    EXPECT_TRUE(off.forced);
    info.max_subgroup_size = 16;
    EXPECT_FALSE(effective_limits(info, {}, {}).subgroup_size_control);
    info.max_subgroup_size = 32;
    info.subgroup_size_control = false;
    EXPECT_FALSE(effective_limits(info, {}, {}).subgroup_size_control);
    EXPECT_FALSE(effective_limits(info, {}, LimitOverrides::parse("no_subgroup_size_control")).forced);

    // Compute units: the override sets an unknown count and only lowers a reported one.
    EXPECT_EQ(effective_limits(info, {}, {}).compute_units, 0u);
    const auto set = effective_limits(info, {}, LimitOverrides::parse("compute_units=12"));
    EXPECT_EQ(set.compute_units, 12u);
    EXPECT_TRUE(set.forced);
    info.compute_units = 132;
    EXPECT_EQ(effective_limits(info, {}, LimitOverrides::parse("compute_units=12")).compute_units, 12u);
    const auto higher = effective_limits(info, {}, LimitOverrides::parse("compute_units=200"));
    EXPECT_EQ(higher.compute_units, 132u);
    EXPECT_FALSE(higher.forced);
}

TEST(Limits, SpecMinimumIsVulkansRequiredLimits) {
    // The "Required Limits" table of the Vulkan specification and no optional feature.
    const LimitOverrides o = LimitOverrides::parse("spec_minimum");
    EXPECT_EQ(o.shared_memory, 16384u);
    EXPECT_EQ(o.workgroup_invocations, 128u);
    ASSERT_TRUE(o.workgroup_size.has_value());
    EXPECT_EQ(*o.workgroup_size, (std::array<std::uint32_t, 3>{128, 128, 64}));
    EXPECT_EQ(o.workgroup_count, 65535u);
    EXPECT_EQ(o.push_constants, 128u);
    EXPECT_EQ(o.storage_buffer_range, 1ull << 27);
    EXPECT_EQ(o.storage_buffers, 4u);
    EXPECT_TRUE(o.no_fp16_storage && o.no_fp16_arithmetic && o.no_subgroup_ops && o.no_subgroup_size_control &&
                o.no_int64 && o.no_integer_dot);
    EXPECT_FALSE(o.compute_units || o.device_heap || o.host_heap);
    EXPECT_EQ(o.describe(),
              "shared_memory=16384,workgroup_invocations=128,workgroup_size=128x128x64,workgroup_count=65535,"
              "storage_buffer_range=134217728,push_constants=128,storage_buffers=4,no_fp16_storage,"
              "no_fp16_arithmetic,no_subgroup_ops,no_subgroup_size_control,no_int64,no_integer_dot");
    EXPECT_EQ(LimitOverrides::parse(o.describe()).describe(), o.describe());  // describe() parses back
    EXPECT_EQ(LimitOverrides::spec_minimum().describe(), o.describe());
    // Later keys win: a preset can be loosened or tightened key by key.
    EXPECT_EQ(LimitOverrides::parse("spec_minimum,storage_buffers=8").storage_buffers, 8u);
    EXPECT_EQ(LimitOverrides::parse("phone,spec_minimum").workgroup_invocations, 128u);
    expect_error([] { (void)LimitOverrides::parse("spec_minimum=1"); }, "unknown limit override");

    // workgroup_size on its own: XxYxZ or one N for all three.
    EXPECT_EQ(*LimitOverrides::parse("workgroup_size=64").workgroup_size, (std::array<std::uint32_t, 3>{64, 64, 64}));
    EXPECT_EQ(*LimitOverrides::parse("workgroup_size=32x16x1").workgroup_size,
              (std::array<std::uint32_t, 3>{32, 16, 1}));
    for (const char* bad : {"workgroup_size=1x2", "workgroup_size=1x2x3x4", "workgroup_size=0x1x1", "workgroup_size"}) {
        EXPECT_THROW((void)LimitOverrides::parse(bad), Error) << bad;
    }

    // Applied to a device with more of everything, it gives exactly the minimums.
    DeviceInfo info;
    info.max_shared_memory = 65536;
    info.max_workgroup_invocations = 1024;
    info.max_workgroup_size = {1024, 1024, 1024};
    info.max_workgroup_count = {1u << 31, 65535, 65535};
    info.max_push_constants = 256;
    info.max_storage_buffer_range = 1ull << 32;
    info.max_per_stage_storage_buffers = 64;
    info.max_descriptor_set_storage_buffers = 96;
    info.storage_16bit = info.float16_arithmetic = info.int64 = info.integer_dot_product = true;
    info.subgroup_size = 32;
    info.min_subgroup_size = 8;
    info.max_subgroup_size = 64;
    info.subgroup_size_control = info.compute_full_subgroups = true;
    info.subgroup_ops.basic = info.subgroup_ops.arithmetic = info.subgroup_ops.shuffle = true;
    const ComputeLimits full = effective_limits(info, {}, {});
    EXPECT_TRUE(full.subgroup_ops && full.subgroup_size_control && full.int64 && full.fp16_storage);
    const ComputeLimits l = effective_limits(info, {}, o);
    EXPECT_EQ(l.shared_memory, 16384u);
    EXPECT_EQ(l.workgroup_invocations, 128u);
    EXPECT_EQ(l.workgroup_size, (std::array<std::uint32_t, 3>{128, 128, 64}));
    EXPECT_EQ(l.workgroup_count, (std::array<std::uint32_t, 3>{65535, 65535, 65535}));
    EXPECT_EQ(l.push_constants, 128u);
    EXPECT_EQ(l.storage_buffer_range, 1ull << 27);
    EXPECT_EQ(l.storage_buffers, 4u);
    EXPECT_FALSE(l.fp16_storage || l.fp16_arithmetic || l.subgroup_ops || l.subgroup_size_control || l.int64 ||
                 l.integer_dot_product);
    EXPECT_EQ(l.subgroup_size, 32u);  // still reported: kernels without subgroup operations ignore it
    EXPECT_TRUE(l.forced);
    // A device below the minimums (impossible for a conformant one) is never raised.
    info.max_workgroup_size = {64, 64, 32};
    EXPECT_EQ(effective_limits(info, {}, o).workgroup_size, (std::array<std::uint32_t, 3>{64, 64, 32}));
}

TEST(DeviceSelection, SubgroupSizeControlAndStorageBuffersAreReadAndEnabled) {
    MessageSink sink;
    Context ctx(test_options(sink));
    const DeviceInfo& d = ctx.device_info();
    EXPECT_GE(d.max_per_stage_storage_buffers, 4u);  // Vulkan's guaranteed minimums
    EXPECT_GE(d.max_descriptor_set_storage_buffers, 24u);
    // Lowered by VKF_LIMITS where it sets storage_buffers (spec_minimum: 4).
    EXPECT_EQ(ctx.limits().storage_buffers,
              std::min({d.max_per_stage_storage_buffers, d.max_descriptor_set_storage_buffers,
                        ctx.overrides().storage_buffers.value_or(UINT32_MAX)}));
    EXPECT_EQ(ctx.device().enabled().subgroup_size_control, d.subgroup_size_control);
    EXPECT_EQ(ctx.device().enabled().compute_full_subgroups, d.compute_full_subgroups);
    if (ctx.limits().subgroup_size_control) {
        EXPECT_TRUE(d.subgroup_size_control && d.compute_full_subgroups);
        EXPECT_GE(ctx.limits().subgroup_size, d.min_subgroup_size);
        EXPECT_LE(ctx.limits().subgroup_size, d.max_subgroup_size);
        EXPECT_GT(d.max_compute_workgroup_subgroups, 0u);
    }
    EXPECT_EQ(sink.validation_count(), 0u);
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

// Mesa's drivers report their release in driverInfo (lavapipe's driverVersion is 1 in 22.3
// and in 25.0 alike): version ranges compare that, every other driver's driverVersion.
TEST(Quirks, MesaVersionsComeFromTheDriverInfo) {
    DeviceInfo info;
    info.vendor_id = 0x10005;
    info.driver_id = VK_DRIVER_ID_MESA_LLVMPIPE;
    info.driver_version = 1;
    info.driver_info = "Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6)";
    EXPECT_EQ(effective_driver_version(info), VK_MAKE_API_VERSION(0, 25, 0, 7));
    const DriverQuirks mesa25 = quirks_for(info);
    EXPECT_TRUE(mesa25.avoid_loop_unrolling);
    EXPECT_EQ(mesa25.max_loop_iterations, 0u);  // no loop limiter measured on 25.0.7
    EXPECT_FALSE(effective_limits(info, mesa25, {}).loop_unrolling);

    info.driver_info = "Mesa 22.3.6";
    EXPECT_EQ(effective_driver_version(info), VK_MAKE_API_VERSION(0, 22, 3, 6));
    const DriverQuirks mesa22 = quirks_for(info);
    EXPECT_FALSE(mesa22.avoid_loop_unrolling);
    EXPECT_EQ(mesa22.max_loop_iterations, 65535u);  // the loop limiter, up to 24.x
    EXPECT_TRUE(effective_limits(info, mesa22, {}).loop_unrolling);
    EXPECT_FALSE(effective_limits(info, mesa22, LimitOverrides::parse("no_unroll")).loop_unrolling);

    info.driver_info = "a build without a version";
    EXPECT_EQ(effective_driver_version(info), 0u);
    EXPECT_FALSE(quirks_for(info).avoid_loop_unrolling);

    DeviceInfo other;
    other.vendor_id = 0x10DE;
    other.driver_id = VK_DRIVER_ID_NVIDIA_PROPRIETARY;
    other.driver_version = 0x86a2c000;
    other.driver_info = "Mesa 25.0.0";  // not a Mesa driver: the string is not read
    EXPECT_EQ(effective_driver_version(other), 0x86a2c000u);
}

}  // namespace
}  // namespace vkf::test
