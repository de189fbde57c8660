// Push-constant blocks compared member by member: what reflection reads from the SPIR-V,
// what check_push_constants refuses, and that pipeline creation refuses a C++ layout that
// differs from its shader's, naming the pipeline and the member.

#include "runtime/push_constants.hpp"
#include "runtime/spirv_reflect.hpp"
#include "shaders/interface/attention.h"
#include "shaders/interface/elementwise.h"
#include "shaders/interface/matmul.h"
#include "shaders/variants.hpp"
#include "tests/support/vulkan_test.hpp"

#include <array>
#include <string>
#include <vector>

namespace vkf::test {
namespace {

void expect_contains(const std::string& message, const std::string& needle) {
    EXPECT_NE(message.find(needle), std::string::npos) << message;
}

const SpirvCode& fill_code() {
    return shaders::variant("elementwise", {"OP_FILL"});
}

TEST(PushConstantReflection, ReportsTheBlockNameAndEveryMember) {
    const ShaderInterface matmul = reflect_shader(shaders::variant("matmul", {"GEMV"}));
    EXPECT_EQ(matmul.push_constant_block, "MatmulParams");
    EXPECT_EQ(matmul.push_constant_size, 76u);
    ASSERT_EQ(matmul.push_constant_members.size(), 19u);
    const char* names[] = {"m",          "n",       "k",        "ldy",      "x_base", "w_base", "bias_base",
                           "res_base",   "y_base",  "k_split",  "n_splits", "flags",  "row0",   "col0",
                           "cache_rows", "q_heads", "kv_heads", "clamp_to", "ln_eps"};
    for (std::uint32_t i = 0; i < 19; ++i) {
        const ReflectedMember& m = matmul.push_constant_members[i];
        EXPECT_EQ(m.name, names[i]);
        EXPECT_EQ(m.type, i < 17 ? "uint" : "float");
        EXPECT_EQ(m.offset, 4 * i);
        EXPECT_EQ(m.size, 4u);
    }
    const ShaderInterface attention = reflect_shader(shaders::variant("attention", {}));
    ASSERT_EQ(attention.push_constant_members.size(), 17u);
    EXPECT_EQ(attention.push_constant_members[6].name, "scale");
    EXPECT_EQ(attention.push_constant_members[6].type, "float");
    EXPECT_EQ(attention.push_constant_members[6].offset, 24u);
    EXPECT_EQ(attention.push_constant_members[16].name, "window");
    EXPECT_EQ(attention.push_constant_members[16].offset, 64u);
}

TEST(PushConstantReflection, RefusesWhatIsNotSpirv) {
    const std::vector<std::uint32_t> garbage(64, 0xdeadbeefu);
    try {
        reflect_shader(SpirvCode{"garbage", garbage});
        FAIL() << "garbage was reflected";
    } catch (const Error& e) {
        expect_contains(e.what(), "shader garbage: not a SPIR-V module vkformer can read");
    }
    const std::span<const std::uint32_t> words = fill_code().words;
    EXPECT_THROW(reflect_shader(SpirvCode{"truncated", words.first(words.size() / 2)}), Error);
}

// The C++ table generated from the same field list agrees with the struct itself.
TEST(PushConstantLayouts, DescribeTheCppStruct) {
    const PushConstantLayout& l = AttentionPush::layout;
    EXPECT_EQ(l.cpp_struct, "AttentionPush");
    EXPECT_EQ(l.block, "AttentionParams");
    EXPECT_EQ(l.size, sizeof(AttentionPush));
    ASSERT_EQ(l.members.size(), 17u);
    EXPECT_EQ(l.members[6].name, "scale");
    EXPECT_EQ(l.members[6].type, "float");
    EXPECT_EQ(l.members[6].offset, offsetof(AttentionPush, scale));
    EXPECT_EQ(l.members[11].name, "alibi_train_len");
    EXPECT_EQ(l.members[15].name, "pool_blocks");
    EXPECT_EQ(l.members[16].name, "window");
    EXPECT_EQ(l.members[16].offset + l.members[16].size, sizeof(AttentionPush));
}

// A module without debug names: every OpName and OpMemberName replaced by OpNops.
std::vector<std::uint32_t> strip_names(std::span<const std::uint32_t> words) {
    std::vector<std::uint32_t> out(words.begin(), words.end());
    for (std::size_t i = 5; i < out.size();) {
        const std::uint32_t count = out[i] >> 16;
        const std::uint32_t op = out[i] & 0xffff;
        if (op == 5 || op == 6) {  // OpName, OpMemberName
            for (std::uint32_t j = 0; j < count; ++j) {
                out[i + j] = (1u << 16) | 0u;  // OpNop
            }
        }
        i += count;
    }
    return out;
}

TEST(PushConstantReflection, StrippedModulesAreComparedWithoutNames) {
    const std::vector<std::uint32_t> words = strip_names(fill_code().words);
    const ShaderInterface stripped = reflect_shader(SpirvCode{"stripped", words});
    EXPECT_EQ(stripped.push_constant_block, "");
    ASSERT_EQ(stripped.push_constant_members.size(), 2u);
    EXPECT_EQ(stripped.push_constant_members[1].name, "");
    EXPECT_EQ(stripped.push_constant_members[1].offset, 4u);
    EXPECT_NO_THROW(check_push_constants(stripped, ElementwisePush::layout, "stripped: "));
}

// A copy of ElementwisePush::layout with one change.
struct EditedLayout {
    std::array<PushConstantMember, 2> members = {ElementwisePush::members[0], ElementwisePush::members[1]};
    PushConstantLayout layout() const { return PushConstantLayout{"ElementwisePush", "ElementwiseParams", 8, members}; }
};

TEST(PushConstantChecks, EachKindOfDifferenceIsRefusedNamingTheMember) {
    const ShaderInterface shader = reflect_shader(fill_code());
    EXPECT_NO_THROW(check_push_constants(shader, ElementwisePush::layout, ""));

    EditedLayout offset;
    offset.members[1].offset = 8;
    expect_contains(error_message([&] { check_push_constants(shader, offset.layout(), "p: "); }),
                    "p: push-constant member 1 is 'value' (uint at offset 4, 4 bytes) in the shader but "
                    "'value' (uint at offset 8, 4 bytes) in ElementwisePush");

    EditedLayout name;
    name.members[1].name = "fill";
    expect_contains(error_message([&] { check_push_constants(shader, name.layout(), ""); }),
                    "'value' (uint at offset 4, 4 bytes) in the shader but 'fill' (uint");

    EditedLayout type;
    type.members[0].type = "float";
    expect_contains(error_message([&] { check_push_constants(shader, type.layout(), ""); }),
                    "member 0 is 'count' (uint at offset 0, 4 bytes) in the shader but 'count' (float");

    EditedLayout size;
    size.members[1].size = 2;
    expect_contains(error_message([&] { check_push_constants(shader, size.layout(), ""); }),
                    "in the shader but 'value' (uint at offset 4, 2 bytes)");

    const PushConstantLayout fewer{"ElementwisePush", "ElementwiseParams", 8,
                                   std::span(ElementwisePush::members).first(1)};
    expect_contains(error_message([&] { check_push_constants(shader, fewer, ""); }),
                    "block has 2 members but ElementwisePush declares 1; missing from ElementwisePush: "
                    "'value' (uint at offset 4, 4 bytes)");

    const std::array<PushConstantMember, 3> three = {ElementwisePush::members[0], ElementwisePush::members[1],
                                                     PushConstantMember{"extra", "uint", 8, 4}};
    const PushConstantLayout more{"ElementwisePush", "ElementwiseParams", 12, three};
    expect_contains(error_message([&] { check_push_constants(shader, more, ""); }),
                    "declares 3; not in the shader: 'extra' (uint at offset 8, 4 bytes)");

    const PushConstantLayout other_block{"ElementwisePush", "MatmulParams", 8, ElementwisePush::members};
    expect_contains(error_message([&] { check_push_constants(shader, other_block, ""); }),
                    "the shader's push-constant block is ElementwiseParams but ElementwisePush mirrors "
                    "MatmulParams");

    // Another family's struct: the first member that differs is named.
    expect_contains(error_message([&] { check_push_constants(shader, MatmulPush::layout, ""); }),
                    "member 0 is 'count' (uint at offset 0, 4 bytes) in the shader but 'm' (uint at offset 0, "
                    "4 bytes) in MatmulPush");
}

class PushConstantPipelines : public VulkanTest {};

TEST_F(PushConstantPipelines, TheRealLayoutIsAcceptedAndAWrongMemberRefused) {
    // A workgroup size no other test uses: the context caches pipelines by key, not layout.
    const PipelineDesc good{.code = &fill_code(),
                            .workgroup_size = {24, 1, 1},
                            .push_constant_layout = ElementwisePush::layout,
                            .binding_count = 1};
    EditedLayout swapped;
    swapped.members[0].name = "value";
    swapped.members[1].name = "count";
    PipelineDesc bad = good;
    bad.workgroup_size = {40, 1, 1};
    bad.push_constant_layout = swapped.layout();
    const std::string message = error_message([&] { ctx().pipeline(bad); });
    expect_contains(message, "pipeline elementwise[OP_FILL]/wg40x1x1: push-constant member 0 is 'count'");
    expect_contains(message, "but 'value' (uint at offset 0, 4 bytes) in ElementwisePush");
    EXPECT_NO_THROW(ctx().pipeline(good));
}

}  // namespace
}  // namespace vkf::test
