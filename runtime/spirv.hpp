#pragma once
// SPIR-V embedded into the library at build time (cmake/VkfShaders.cmake).

#include <cstdint>
#include <span>
#include <string_view>

namespace vkf {

struct SpirvCode {
    std::string_view name;
    std::span<const std::uint32_t> words;
};

}  // namespace vkf
