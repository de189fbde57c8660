#include "apps/common/model_tokenizer.hpp"

#include "base/error.hpp"

#include <filesystem>

namespace vkf::app {

text::Tokenizer load_model_tokenizer(const std::string& model_dir, const std::string& tokenizer_option) {
    if (!tokenizer_option.empty()) {
        return text::Tokenizer::load(tokenizer_option);
    }
    const std::filesystem::path path = std::filesystem::path(model_dir) / "tokenizer.json";
    if (!std::filesystem::exists(path)) {
        throw Error("text needs a tokenizer: '" + path.string() + "' does not exist; give one with --tokenizer FILE");
    }
    return text::Tokenizer::load(path);
}

}  // namespace vkf::app
