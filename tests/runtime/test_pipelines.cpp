// Pipelines: created once per key, and refused with a clear error where their C++ side
// does not match their shader or the device, the device's limits forced lower included.

#include "host/ops/attention.hpp"
#include "host/ops/elementwise.hpp"
#include "host/ops/matmul.hpp"
#include "runtime/spirv_reflect.hpp"
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

// The row-dot matmul kernel: subgroup arithmetic, 5 storage buffers.
PipelineDesc rowdot_desc(std::uint32_t width, std::uint32_t subgroup_size) {
    return PipelineDesc{.code = &shaders::variant("matmul", {"ROWDOT"}),
                        .workgroup_size = {width, 1, 1},
                        .push_constant_layout = MatmulPush::layout,
                        .binding_count = 5,
                        .required_subgroup_size = subgroup_size};
}

TEST_F(Pipelines, SubgroupKernelsRequireFullSubgroupsOfTheirSize) {
    const std::uint32_t sg = ctx().limits().subgroup_size;
    // Whatever the device: a shader with subgroup operations must require its subgroup size.
    expect_error([&] { ctx().pipeline(rowdot_desc(4 * sg, 0)); },
                 "uses subgroup operations but requires no subgroup size");
    // Unless it checks its subgroups itself and says so (the tiled attention's
    // SUBGROUP_ANY_SIZE, created by test_attention_arith): the claim, not the variant, lets it
    // pass, and refused before the driver compiles anything.
    expect_error(
        [&] {
            ctx().pipeline(
                PipelineDesc{.code = &shaders::variant("attention", {"SUBGROUP_REDUCE", "SUBGROUP_ANY_SIZE"}),
                             .workgroup_size = {4 * sg, 1, 1},
                             .constants = {{VKF_ATTN_SPEC_TPR, 4}, {VKF_ATTN_SPEC_BR, sg}},
                             .push_constant_layout = AttentionPush::layout,
                             .binding_count = 6});
        },
        "uses subgroup operations but requires no subgroup size");
    if (!ctx().limits().subgroup_size_control) {
        GTEST_SKIP() << "the device cannot require full subgroups of a known size (subgroupSizeControl, "
                        "computeFullSubgroups)";
    }
    EXPECT_NE(ctx().pipeline(rowdot_desc(4 * sg, sg)).handle(), VK_NULL_HANDLE);
    EXPECT_NE(rowdot_desc(4 * sg, sg).key().find("/sg" + std::to_string(sg)), std::string::npos);
    // Full subgroups need a workgroup width that is a multiple of the subgroup size.
    if (sg > 1) {
        expect_error([&] { ctx().pipeline(rowdot_desc(sg + 1, sg)); },
                     "workgroup width " + std::to_string(sg + 1) + " is not a multiple of " + std::to_string(sg));
    }
    expect_error([&] { ctx().pipeline(rowdot_desc(4 * sg, 3)); }, "subgroup size 3 cannot be required");
    const std::uint32_t too_big = ctx().device_info().max_subgroup_size * 2;
    expect_error([&] { ctx().pipeline(rowdot_desc(too_big, too_big)); },
                 "subgroup size " + std::to_string(too_big) + " cannot be required");
}

TEST(ShaderVariants, OnlyTheSubgroupVariantsUseSubgroupOperations) {
    // The kernels whose ops require full subgroups (attention_rows SUBGROUP_LOADS, the tiled
    // attention's SUBGROUP_REDUCE, the ROWDOT matmuls, the cooperative-matrix matmul) are the only ones with subgroup
    // operations: a new one must be planned
    // only where ComputeLimits::subgroup_size_control holds, and created with its size.
    std::vector<std::string> found;
    for (const shaders::ShaderVariant& v : shaders::all_variants()) {
        if (reflect_shader(*v.code).subgroup_operations) {
            found.emplace_back(v.code->name);
        }
    }
    ASSERT_FALSE(found.empty());
    for (const std::string& name : found) {
        const bool expected = name.starts_with("attention_rows[") ? name.find("SUBGROUP_LOADS") != std::string::npos
                              : name.starts_with("attention[")    ? name.find("SUBGROUP_REDUCE") != std::string::npos
                              // gl_SubgroupID: its subgroups own blocks of Y (the plan requires their size)
                              : name.starts_with("matmul_coopmat") ? true
                              : name.starts_with("matmul[") || name.starts_with("matmul_quant[")
                                  ? name.find("ROWDOT") != std::string::npos
                                  : false;
        EXPECT_TRUE(expected) << name << " uses subgroup operations";
    }
    for (const char* family : {"attention_rows[", "attention[", "matmul[", "matmul_quant["}) {
        EXPECT_TRUE(std::any_of(found.begin(), found.end(), [&](const std::string& n) {
            return n.starts_with(family);
        })) << family;
    }
}

TEST(PipelinesForcedLimits, NoSubgroupSizeControlRefusesRequiredSizes) {
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("no_subgroup_size_control")));
    EXPECT_FALSE(ctx.limits().subgroup_size_control);
    const std::uint32_t sg = ctx.limits().subgroup_size;
    expect_error([&] { ctx.pipeline(rowdot_desc(4 * sg, sg)); }, "VKF_LIMITS no_subgroup_size_control");
    EXPECT_EQ(ctx.pipeline_count(), 0u);
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(PipelinesForcedLimits, OptionalFeaturesAreCheckedAgainstTheForcedLimits) {
    // A plan that ignored a forced limit would be refused by the pipeline: shaders whose
    // SPIR-V declares Int64, subgroup arithmetic or integer dot products need the feature.
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("no_int64,no_subgroup_ops,no_integer_dot")));
    const ShaderInterface wide = reflect_shader(shaders::variant("matmul_quant", {"Q8_0", "BLOCKED", "WIDE64"}));
    EXPECT_TRUE(wide.int64);
    EXPECT_FALSE(wide.subgroup_arithmetic_or_shuffle);
    expect_error(
        [&] {
            ctx.pipeline(PipelineDesc{.code = &shaders::variant("matmul_quant", {"Q8_0", "BLOCKED", "WIDE64"}),
                                      .workgroup_size = {64, 1, 1},
                                      .push_constant_layout = MatmulQuantPush::layout,
                                      .binding_count = 6});
        },
        "uses 64-bit integers (shaderInt64; no_int64), which the device lacks or VKF_LIMITS forbids");
    EXPECT_TRUE(reflect_shader(shaders::variant("matmul_quant", {"Q8_0", "BLOCKED", "INTDOT"})).integer_dot_product);
    expect_error(
        [&] {
            ctx.pipeline(PipelineDesc{.code = &shaders::variant("matmul_quant", {"Q8_0", "BLOCKED", "INTDOT"}),
                                      .workgroup_size = {64, 1, 1},
                                      .push_constant_layout = MatmulQuantPush::layout,
                                      .binding_count = 6});
        },
        "uses integer dot products");
    const std::uint32_t sg = ctx.limits().subgroup_size;
    if (ctx.limits().subgroup_size_control) {
        EXPECT_TRUE(reflect_shader(shaders::variant("matmul", {"ROWDOT"})).subgroup_arithmetic_or_shuffle);
        expect_error([&] { ctx.pipeline(rowdot_desc(4 * sg, sg)); }, "uses subgroup arithmetic or shuffles");
    }
    EXPECT_EQ(ctx.pipeline_count(), 0u);
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(PipelinesForcedLimits, StorageBuffersAreCheckedAgainstTheForcedLimit) {
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("storage_buffers=2")));
    expect_error(
        [&] {
            ctx.pipeline(PipelineDesc{.code = &shaders::variant("elementwise", {"OP_ADD"}),
                                      .push_constant_layout = ElementwisePush::layout,
                                      .binding_count = 3});
        },
        "pipeline elementwise");
    expect_error(
        [&] {
            ctx.pipeline(PipelineDesc{.code = &shaders::variant("elementwise", {"OP_ADD"}),
                                      .push_constant_layout = ElementwisePush::layout,
                                      .binding_count = 3});
        },
        "needs 3 storage buffers per shader stage; the device allows 2");
    ctx.pipeline(PipelineDesc{.code = &shaders::variant("elementwise", {"OP_COPY"}),
                              .push_constant_layout = ElementwisePush::layout,
                              .binding_count = 2});
    EXPECT_EQ(ctx.pipeline_count(), 1u);
    EXPECT_EQ(sink.validation_count(), 0u);
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
