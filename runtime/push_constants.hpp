#pragma once
// The C++ side's description of a shader's push-constant block. shaders/interface/*.h
// generate it from the same field list as the GLSL block, and pipeline creation compares it
// with the block in the SPIR-V member by member: a field added, removed, reordered or
// retyped on one side only is refused before it can shift every value after it.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace vkf {

struct ShaderInterface;

struct PushConstantMember {
    std::string_view name;
    std::string_view type;  // GLSL spelling: "uint" or "float"
    std::uint32_t offset = 0;
    std::uint32_t size = 0;
};

struct PushConstantLayout {
    std::string_view cpp_struct;  // e.g. "MatmulPush", for messages
    std::string_view block;       // the GLSL block's type name, e.g. "MatmulParams"
    std::uint32_t size = 0;       // sizeof the C++ struct; 0: no push constants
    std::span<const PushConstantMember> members;
};

// Throws vkf::Error, its message starting with `who`, when the shader's push-constant block
// differs from `layout` in a member's name, type, offset or size, in the member count, in
// the block's name or in its size. Names and types are compared only where the SPIR-V
// still has them (a stripped module has no names).
void check_push_constants(const ShaderInterface& shader, const PushConstantLayout& layout, const std::string& who);

}  // namespace vkf
