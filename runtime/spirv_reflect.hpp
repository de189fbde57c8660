#pragma once
// Just enough SPIR-V reflection to check a pipeline's C++ side against its shader: the
// push-constant block size and the storage-buffer bindings of descriptor set 0.

#include "runtime/spirv.hpp"

#include <cstdint>
#include <vector>

namespace vkf {

struct ShaderInterface {
    std::uint32_t push_constant_size = 0; // bytes; 0 when the shader has no push constants
    std::vector<std::uint32_t> storage_bindings; // sorted binding numbers in set 0
};

// Throws vkf::Error when the module is malformed or uses descriptor sets other than 0.
ShaderInterface reflect_shader(const SpirvCode& code);

} // namespace vkf
