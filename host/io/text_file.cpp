#include "host/io/text_file.hpp"

#include "base/files.hpp"

namespace vkf {

std::string read_text_file(const std::filesystem::path& path, std::uint64_t max_bytes) {
    return read_file(path, max_bytes, "text file");
}

}  // namespace vkf
