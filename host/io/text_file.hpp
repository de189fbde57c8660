#pragma once
// A whole file's bytes as a string: prompts, texts to score or tokenize. No Vulkan.

#include <filesystem>
#include <string>

namespace vkf {

// Throws vkf::Error "<path>: cannot open for reading" or "<path>: read error".
std::string read_text_file(const std::filesystem::path& path);

}  // namespace vkf
