// tokenizer.ggml.* of a GGUF file as the Hugging Face tokenizer.json it was converted from
// (llama.cpp's conversion/base.py get_vocab_base, bert.py's phantom-space WordPiece vocabulary
// and gguf-py's SpecialVocab wrote it), with the special tokens llama.cpp's llama-vocab.cpp
// adds: tokenizer.ggml.add_bos_token, add_eos_token and add_sep_token, each defaulting as there.

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

std::optional<bool> flag(const GgufFile& file, std::string_view key) {
    const GgufValue* value = file.find(key);
    if (value == nullptr) {
        return std::nullopt;
    }
    if (value->type != GgufValueType::Bool) {
        throw Error(fmt::format("{}: {} must be a boolean", file.label(), key));
    }
    return value->as_bool();
}

// A special token id the file states, else llama.cpp's default for the tokenizer (nullopt: none).
std::optional<std::uint64_t> special_id(const GgufFile& file, std::string_view key,
                                        std::optional<std::uint64_t> fallback, std::size_t vocab_size) {
    const GgufValue* value = file.find(key);
    const std::optional<std::uint64_t> id = value == nullptr ? fallback : std::optional(file.uint_at(key));
    if (id && *id >= vocab_size) {
        throw Error(fmt::format("{}: {} {} is not one of the {} tokens", file.label(), key, *id, vocab_size));
    }
    return id;
}

// What llama.cpp adds around the text: [bos] text [eos] [sep], as a TemplateProcessing of the
// tokens' texts (null when it adds nothing).
nlohmann::json template_processing(const std::vector<std::pair<std::uint64_t, std::string>>& before,
                                   const std::vector<std::pair<std::uint64_t, std::string>>& after) {
    if (before.empty() && after.empty()) {
        return nullptr;
    }
    nlohmann::json single = nlohmann::json::array();
    nlohmann::json specials = nlohmann::json::object();
    const auto special = [&](const std::pair<std::uint64_t, std::string>& token) {
        single.push_back({{"SpecialToken", {{"id", token.second}, {"type_id", 0}}}});
        specials[token.second] = {{"id", token.second}, {"ids", {token.first}}, {"tokens", {token.second}}};
    };
    for (const auto& token : before) {
        special(token);
    }
    single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
    for (const auto& token : after) {
        special(token);
    }
    return {{"type", "TemplateProcessing"}, {"single", single}, {"pair", nullptr}, {"special_tokens", specials}};
}

struct Vocabulary {
    nlohmann::json vocab = nlohmann::json::object();
    nlohmann::json added = nlohmann::json::array();
    std::vector<std::string> texts;  // by id, as the model's vocabulary names them
};

// tokenizer.ggml.tokens and token_type as a vocabulary; `unphantom` turns a stored token into
// the model's (bert.py wrote "##x" as "x" and a word start "x" as "\u2581x").
Vocabulary vocabulary(const GgufFile& file, bool unphantom) {
    const auto& tokens = file.at("tokenizer.ggml.tokens");
    if (tokens.element_type != GgufValueType::String) {
        throw Error(fmt::format("{}: tokenizer.ggml.tokens must be an array of strings", file.label()));
    }
    const GgufValue* types = file.find("tokenizer.ggml.token_type");
    if (types != nullptr && (!types->is_array() || types->as_array().size() != tokens.as_array().size())) {
        throw Error(fmt::format("{}: tokenizer.ggml.token_type must be an array of one type per token", file.label()));
    }
    constexpr std::string_view kPhantom = "\xe2\x96\x81";  // U+2581
    Vocabulary out;
    for (std::size_t id = 0; id < tokens.as_array().size(); ++id) {
        std::string token = tokens.as_array()[id].as_string();
        const std::uint64_t type = types == nullptr ? kNormal : types->as_array()[id].as_uint64();
        if (unphantom && type != kControl) {
            token = token.starts_with(kPhantom) ? token.substr(kPhantom.size()) : "##" + token;
        }
        out.texts.push_back(token);
        if (type != kNormal && type != kControl && type != kUserDefined) {
            continue;  // llama.cpp's [PADn] fillers up to config.json's vocab_size, bytes, unknown
        }
        if (out.vocab.contains(token)) {
            throw Error(fmt::format("{}: tokenizer.ggml.tokens holds '{}' twice", file.label(), token));
        }
        out.vocab[token] = id;
        if (type != kNormal) {
            out.added.push_back({{"id", id},
                                 {"content", token},
                                 {"single_word", false},
                                 {"lstrip", false},
                                 {"rstrip", false},
                                 {"normalized", false},
                                 {"special", type == kControl}});
        }
    }
    return out;
}

// llama.cpp's defaults (llama-vocab.cpp): "gpt2" adds nothing; "bert" adds bos (101, [CLS])
// before and sep (102, [SEP]) after.
nlohmann::json post_processor(const GgufFile& file, const Vocabulary& v, bool bert) {
    const std::size_t n = v.texts.size();
    std::vector<std::pair<std::uint64_t, std::string>> before, after;
    const auto add = [&](std::vector<std::pair<std::uint64_t, std::string>>& where, std::string_view add_key,
                         bool add_default, std::string_view id_key, std::optional<std::uint64_t> id_default) {
        if (!flag(file, add_key).value_or(add_default)) {
            return;
        }
        const std::optional<std::uint64_t> id = special_id(file, id_key, id_default, n);
        if (!id) {
            throw Error(fmt::format("{}: {} is true but the file has no {}", file.label(), add_key, id_key));
        }
        where.emplace_back(*id, v.texts[static_cast<std::size_t>(*id)]);
    };
    add(before, "tokenizer.ggml.add_bos_token", bert, "tokenizer.ggml.bos_token_id",
        bert ? std::optional<std::uint64_t>(101) : std::nullopt);
    add(after, "tokenizer.ggml.add_eos_token", false, "tokenizer.ggml.eos_token_id", std::nullopt);
    if (bert) {
        add(after, "tokenizer.ggml.add_sep_token", true, "tokenizer.ggml.seperator_token_id", 102);
    }
    return template_processing(before, after);
}

std::string dump(const nlohmann::json& tokenizer) {
    return tokenizer.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
}

// bert.py's WordPiece: BERT's normalizer (llama.cpp's WPM lowercases) and pre-tokenizer.
std::string wordpiece_json(const GgufFile& file) {
    const Vocabulary v = vocabulary(file, true);
    const std::optional<std::uint64_t> unk = special_id(file, "tokenizer.ggml.unknown_token_id", 100, v.texts.size());
    const nlohmann::json tokenizer = {
        {"version", "1.0"},
        {"truncation", nullptr},
        {"padding", nullptr},
        {"added_tokens", v.added},
        {"normalizer",
         {{"type", "BertNormalizer"},
          {"clean_text", true},
          {"handle_chinese_chars", true},
          {"strip_accents", nullptr},
          {"lowercase", true}}},
        {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
        {"post_processor", post_processor(file, v, true)},
        {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
        {"model",
         {{"type", "WordPiece"},
          {"unk_token", v.texts[static_cast<std::size_t>(*unk)]},
          {"continuing_subword_prefix", "##"},
          {"max_input_chars_per_word", 100},
          {"vocab", v.vocab}}},
    };
    return dump(tokenizer);
}

}  // namespace

std::optional<std::string> tokenizer_json_from_gguf(const GgufFile& file) {
    const GgufValue* model = file.find("tokenizer.ggml.model");
    if (model == nullptr || model->type != GgufValueType::String) {
        return std::nullopt;
    }
    if (model->as_string() == "bert") {
        return wordpiece_json(file);
    }
    const GgufValue* pre = file.find("tokenizer.ggml.pre");
    if (pre == nullptr || pre->type != GgufValueType::String || model->as_string() != "gpt2") {
        return std::nullopt;
    }
    const std::optional<nlohmann::json> pre_tokenizer_json = pre_tokenizer(pre->as_string());
    if (!pre_tokenizer_json) {
        return std::nullopt;
    }
    const auto& merges = file.at("tokenizer.ggml.merges");
    if (merges.element_type != GgufValueType::String) {
        throw Error(fmt::format("{}: tokenizer.ggml.merges must be an array of strings", file.label()));
    }
    const Vocabulary v = vocabulary(file, false);
    nlohmann::json merge_list = nlohmann::json::array();
    for (const GgufValue& merge : merges.as_array()) {
        merge_list.push_back(merge.as_string());
    }
    const nlohmann::json tokenizer = {
        {"version", "1.0"},
        {"truncation", nullptr},
        {"padding", nullptr},
        {"added_tokens", v.added},
        {"normalizer", nullptr},
        {"pre_tokenizer", *pre_tokenizer_json},
        {"post_processor", post_processor(file, v, false)},
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
          {"vocab", v.vocab},
          {"merges", merge_list}}},
    };
    return dump(tokenizer);
}

}  // namespace vkf
