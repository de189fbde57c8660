// tokenizer.ggml.* of a GGUF file as the Hugging Face tokenizer.json it was converted from
// (llama.cpp's conversion/base.py get_vocab_base and gguf-py's SpecialVocab wrote it).

#include "host/spec/gguf_checkpoint.hpp"

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace vkf {
namespace {

// gguf-py's TokenType.
constexpr std::uint64_t kNormal = 1, kControl = 3, kUserDefined = 4;

nlohmann::json byte_level(bool use_regex) {
    return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", use_regex}};
}

// The pre-tokenizer of each tokenizer.ggml.pre translated: GPT-2's byte-level regex, and
// BLOOM's Split (bigscience/bloom's tokenizer.json; tests/text/data/bloom_style.json).
std::optional<nlohmann::json> pre_tokenizer(std::string_view pre) {
    if (pre == "gpt-2") {
        return byte_level(true);
    }
    if (pre == "bloom") {
        return nlohmann::json{
            {"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"},
               {"pattern", {{"Regex", " ?[^(\\s|[.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c])]+"}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              byte_level(false)}}};
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> tokenizer_json_from_gguf(const GgufFile& file) {
    const GgufValue* model = file.find("tokenizer.ggml.model");
    const GgufValue* pre = file.find("tokenizer.ggml.pre");
    if (model == nullptr || pre == nullptr || model->type != GgufValueType::String ||
        pre->type != GgufValueType::String || model->as_string() != "gpt2") {
        return std::nullopt;
    }
    const std::optional<nlohmann::json> pre_tokenizer_json = pre_tokenizer(pre->as_string());
    if (!pre_tokenizer_json) {
        return std::nullopt;
    }
    const auto& tokens = file.at("tokenizer.ggml.tokens");
    const auto& merges = file.at("tokenizer.ggml.merges");
    if (tokens.element_type != GgufValueType::String || merges.element_type != GgufValueType::String) {
        throw Error(
            fmt::format("{}: tokenizer.ggml.tokens and tokenizer.ggml.merges must be arrays of strings", file.label()));
    }
    const GgufValue* types = file.find("tokenizer.ggml.token_type");
    if (types != nullptr && (!types->is_array() || types->as_array().size() != tokens.as_array().size())) {
        throw Error(fmt::format("{}: tokenizer.ggml.token_type must be an array of one type per token", file.label()));
    }
    nlohmann::json vocab = nlohmann::json::object();
    nlohmann::json added = nlohmann::json::array();
    for (std::size_t id = 0; id < tokens.as_array().size(); ++id) {
        const std::string& token = tokens.as_array()[id].as_string();
        const std::uint64_t type = types == nullptr ? kNormal : types->as_array()[id].as_uint64();
        if (type != kNormal && type != kControl && type != kUserDefined) {
            continue;  // llama.cpp's [PADn] fillers up to config.json's vocab_size, bytes, unknown
        }
        if (vocab.contains(token)) {
            throw Error(fmt::format("{}: tokenizer.ggml.tokens holds '{}' twice", file.label(), token));
        }
        vocab[token] = id;
        if (type != kNormal) {
            added.push_back({{"id", id},
                             {"content", token},
                             {"single_word", false},
                             {"lstrip", false},
                             {"rstrip", false},
                             {"normalized", false},
                             {"special", type == kControl}});
        }
    }
    nlohmann::json merge_list = nlohmann::json::array();
    for (const GgufValue& merge : merges.as_array()) {
        merge_list.push_back(merge.as_string());
    }
    const nlohmann::json tokenizer = {
        {"version", "1.0"},
        {"truncation", nullptr},
        {"padding", nullptr},
        {"added_tokens", added},
        {"normalizer", nullptr},
        {"pre_tokenizer", *pre_tokenizer_json},
        {"post_processor", nullptr},
        {"decoder", byte_level(true)},
        {"model",
         {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", false},
          {"byte_fallback", false},
          {"ignore_merges", false},
          {"vocab", vocab},
          {"merges", merge_list}}},
    };
    return tokenizer.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
}

}  // namespace vkf
