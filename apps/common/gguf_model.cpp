#include "apps/common/gguf_model.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/files.hpp"
#include "host/io/gguf.hpp"
#include "host/spec/gguf_checkpoint.hpp"

namespace vkf::app {

GgufModelDirectory::GgufModelDirectory(const std::filesystem::path& gguf) {
    const GgufFile file = open_gguf(gguf);
    model_config_from_gguf(file);  // an architecture vkformer cannot run is named before any copying
    std::string pattern = (std::filesystem::temp_directory_path() / "vkf-gguf-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
        throw Error(fmt::format("{}: cannot create a directory for its conversion ('{}'): {}", file.label(), pattern,
                                std::strerror(errno)));
    }
    dir_ = pattern;
    try {
        check_free_space(dir_, file.file_size(), fmt::format("converting {}", file.label()));
        write_checkpoint_from_gguf(file, dir_);
    } catch (...) {
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
        throw;
    }
}

GgufModelDirectory::~GgufModelDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
}

std::unique_ptr<GgufModelDirectory> convert_if_gguf(const std::filesystem::path& model) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(model, error) || !looks_like_gguf(model)) {
        return nullptr;
    }
    return std::make_unique<GgufModelDirectory>(model);
}

}  // namespace vkf::app
