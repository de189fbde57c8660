#pragma once
// A whole file's bytes as a string: prompts, texts to score or tokenize. No Vulkan.

#include <cstdint>
#include <filesystem>
#include <string>

namespace vkf {

// Throws vkf::Error naming the file when it cannot be opened or read, is not a regular file
// (a FIFO is refused, not waited on) or holds more than max_bytes.
std::string read_text_file(const std::filesystem::path& path, std::uint64_t max_bytes = std::uint64_t{1} << 30);

}  // namespace vkf
