#include "host/io/text_file.hpp"

#include "runtime/error.hpp"

#include <fstream>
#include <iterator>

namespace vkf {

std::string read_text_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw Error(path.string() + ": cannot open for reading");
    }
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) {
        throw Error(path.string() + ": read error");
    }
    return bytes;
}

}  // namespace vkf
