#include "apps/common/model_tokenizer.hpp"

#include "base/error.hpp"
#include "host/io/gguf.hpp"
#include "host/spec/gguf_checkpoint.hpp"

#include <filesystem>
#include <optional>
#include <system_error>

#include <fmt/format.h>

namespace vkf::app {

text::Tokenizer load_model_tokenizer(const std::string& model_dir, const std::string& tokenizer_option) {
    if (!tokenizer_option.empty()) {
        return text::Tokenizer::load(tokenizer_option);
    }
    std::error_code ignored;
    if (std::filesystem::is_regular_file(model_dir, ignored) && looks_like_gguf(model_dir)) {
        const GgufFile file = open_gguf(model_dir);
        const std::optional<std::string> json = tokenizer_json_from_gguf(file);
        if (!json) {
            throw Error(
                fmt::format("text needs a tokenizer: {} has no tokenizer vkformer reads from "
                            "tokenizer.ggml.*; give one with --tokenizer FILE",
                            file.label()));
        }
        return text::Tokenizer::parse(*json, fmt::format("{}: tokenizer.ggml.*", file.label()));
    }
    const std::filesystem::path path = std::filesystem::path(model_dir) / "tokenizer.json";
    if (!std::filesystem::exists(path)) {
        throw Error("text needs a tokenizer: '" + path.string() + "' does not exist; give one with --tokenizer FILE");
    }
    return text::Tokenizer::load(path);
}

}  // namespace vkf::app
