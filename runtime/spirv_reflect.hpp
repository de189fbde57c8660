#pragma once
// What pipeline creation checks a pipeline's C++ side against: the shader's push-constant
// block (size, members), its storage-buffer bindings of descriptor set 0 and whether it uses
// subgroup operations, read by
// SPIRV-Cross's reflection (Debian's libspirv-cross-c-shared-dev, its core library linked
// statically, so applications carry no extra shared library).

#include "runtime/spirv.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace vkf {

struct ReflectedMember {
    std::string name;  // from OpMemberName; "" when the module is stripped
    std::string type;  // GLSL spelling of scalars and vectors ("uint", "vec4"); "" for others
    std::uint32_t offset = 0;
    std::uint32_t size = 0;
};

struct ShaderInterface {
    std::uint32_t push_constant_size = 0;                // bytes; 0 when the shader has no push constants
    std::string push_constant_block;                     // the block's type name; "" when stripped or absent
    std::vector<ReflectedMember> push_constant_members;  // in declaration order
    std::vector<std::uint32_t> storage_bindings;         // sorted binding numbers in set 0
    bool subgroup_operations = false;                    // declares a GroupNonUniform* or Subgroup*KHR capability
    // Optional features the shader's capabilities need (checked against ComputeLimits when a
    // pipeline is created, so that a forced limit such as VKF_LIMITS=spec_minimum holds).
    bool subgroup_arithmetic_or_shuffle = false;  // GroupNonUniformArithmetic / Shuffle(Relative)
    bool int64 = false;                           // Int64 (shaderInt64)
    bool float16 = false;                         // Float16 (shaderFloat16)
    bool storage_16bit = false;                   // StorageBuffer16BitAccess and the like
    bool integer_dot_product = false;             // DotProduct* (shaderIntegerDotProduct)
    bool cooperative_matrix = false;              // CooperativeMatrixNV (VK_NV_cooperative_matrix)
};

// Throws vkf::Error when the module is malformed, uses descriptor sets other than 0 or
// declares a uniform buffer.
ShaderInterface reflect_shader(const SpirvCode& code);

}  // namespace vkf
