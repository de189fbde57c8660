// The C API's tokenizers.
#include "capi/capi_internal.hpp"

#include "host/io/gguf.hpp"
#include "host/spec/gguf_checkpoint.hpp"

#include <fmt/format.h>
#include <optional>
#include <string>
#include <system_error>

namespace vkf::capi {
namespace {

const vkf::text::Tokenizer& tokenizer_of(const vkf_tokenizer* tokenizer) {
    return *live(tokenizer, Kind::Tokenizer, "vkf_tokenizer").tokenizer;
}

}  // namespace
}  // namespace vkf::capi

using namespace vkf::capi;

extern "C" {

VKF_API vkf_status vkf_tokenizer_load(const char* path, vkf_tokenizer** out) {
    return guarded(__func__, [&] {
        out_ptr(out, "out");
        std::filesystem::path file = existing_path(path, "path");
        if (std::filesystem::is_directory(file)) {
            file /= "tokenizer.json";
            if (!std::filesystem::exists(file)) {
                throw ApiError(VKF_ERROR_IO, std::string("path '") + path + "' has no tokenizer.json");
            }
        }
        auto handle = std::make_unique<vkf_tokenizer>();
        std::error_code ignored;
        if (std::filesystem::is_regular_file(file, ignored) && vkf::looks_like_gguf(file)) {
            // A GGUF file's tokenizer.ggml.* (host/spec/gguf_checkpoint.hpp).
            const vkf::GgufFile gguf = vkf::open_gguf(file);
            const std::optional<std::string> json = vkf::tokenizer_json_from_gguf(gguf);
            if (!json) {
                throw ApiError(VKF_ERROR_MODEL,
                               gguf.label() + " has no tokenizer vkformer reads from tokenizer.ggml.*");
            }
            handle->tokenizer = std::make_unique<vkf::text::Tokenizer>(
                vkf::text::Tokenizer::parse(*json, gguf.label() + ": tokenizer.ggml.*"));
        } else {
            handle->tokenizer = std::make_unique<vkf::text::Tokenizer>(vkf::text::Tokenizer::load(file));
        }
        register_handle(handle.get(), Kind::Tokenizer);
        *out = handle.release();
    });
}

VKF_API vkf_status vkf_tokenizer_free(vkf_tokenizer* tokenizer) {
    return guarded(__func__, [&] {
        if (tokenizer != nullptr) {
            unregister_handle(tokenizer, Kind::Tokenizer, "vkf_tokenizer");
            delete tokenizer;
        }
    });
}

VKF_API vkf_status vkf_tokenizer_vocab_size(const vkf_tokenizer* tokenizer, uint32_t* size) {
    return guarded(__func__, [&] {
        const auto& t = tokenizer_of(tokenizer);
        *out_ptr(size, "size") = static_cast<std::uint32_t>(t.vocab_size());
    });
}

VKF_API vkf_status vkf_tokenizer_token_id(const vkf_tokenizer* tokenizer, const char* token, uint32_t* id) {
    return guarded(__func__, [&] {
        const auto& t = tokenizer_of(tokenizer);
        require(token != nullptr, "token is NULL");
        out_ptr(id, "id");
        check_utf8(token, "token");
        const auto found = t.find(token);
        if (!found) {
            throw ApiError(VKF_ERROR_MODEL, std::string("the vocabulary has no token '") + token + "'");
        }
        *id = *found;
    });
}

VKF_API vkf_status vkf_tokenize(const vkf_tokenizer* tokenizer, const char* text, size_t length, int add_special,
                                uint32_t* ids, size_t capacity, size_t* n_ids) {
    return guarded(__func__, [&] {
        const auto& t = tokenizer_of(tokenizer);
        require(text != nullptr || length == 0, "text is NULL");
        require(ids != nullptr || capacity == 0, "ids is NULL with a capacity");
        out_ptr(n_ids, "n_ids");
        const std::string_view view = length == 0 ? std::string_view() : std::string_view(text, length);
        check_utf8(view, "text");
        const std::vector<vkf::text::TokenId> result = t.encode(view, add_special != 0);
        *n_ids = result.size();
        if (result.size() > capacity) {
            throw ApiError(VKF_ERROR_BUFFER_TOO_SMALL,
                           fmt::to_string(result.size()) + " ids, capacity is " + fmt::to_string(capacity));
        }
        std::copy(result.begin(), result.end(), ids);
    });
}

VKF_API vkf_status vkf_detokenize(const vkf_tokenizer* tokenizer, const uint32_t* ids, size_t n_ids, int skip_special,
                                  char* text, size_t capacity, size_t* length) {
    return guarded(__func__, [&] {
        const auto& t = tokenizer_of(tokenizer);
        require(ids != nullptr || n_ids == 0, "ids is NULL");
        require(text != nullptr || capacity == 0, "text is NULL with a capacity");
        out_ptr(length, "length");
        std::vector<vkf::text::TokenId> list(n_ids);
        std::copy_n(ids, n_ids, list.begin());
        const std::string result = t.decode(list, skip_special != 0);
        *length = result.size();
        if (result.size() + 1 > capacity) {
            throw ApiError(
                VKF_ERROR_BUFFER_TOO_SMALL,
                fmt::to_string(result.size() + 1) + " bytes with the NUL, capacity is " + fmt::to_string(capacity));
        }
        std::memcpy(text, result.data(), result.size());
        text[result.size()] = '\0';
    });
}

}  // extern "C"
