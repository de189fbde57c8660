#include "host/quant/gguf_vocab_writer.hpp"

#include "base/error.hpp"
#include "host/io/gguf_keys.hpp"
#include "host/io/gguf_writer.hpp"
#include "host/io/json.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <limits>
#include <map>
#include <optional>
#include <string>

namespace vkf {
namespace {

namespace fs = std::filesystem;
using gguf_key::TokenType;

// gguf-py's SpecialVocab: the kinds looked up, and those GGUFWriter has a key for (it has no
// cls id and no add_unk/pad/cls/mask flag, and skips them).
constexpr std::array<std::string_view, 7> kSpecialKinds = {"bos", "eos", "unk", "sep", "pad", "cls", "mask"};
bool has_id_key(std::string_view kind) {
    return kind != "cls";
}
bool has_add_key(std::string_view kind) {
    return kind == "bos" || kind == "eos" || kind == "sep";
}

std::optional<JsonValue> read_if_present(const fs::path& file) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
        return std::nullopt;
    }
    return read_json_file(file, std::uint64_t{256} << 20);
}

const JsonValue* member(const JsonValue& object, std::string_view key) {
    return object.is_object() ? object.find(key) : nullptr;
}

std::string string_member(const JsonValue& object, std::string_view key) {
    const JsonValue* value = member(object, key);
    return value != nullptr && value->is_string() ? value->as_string() : std::string();
}

bool bool_member(const JsonValue& object, std::string_view key, bool absent) {
    const JsonValue* value = member(object, key);
    return value != nullptr && value->is_bool() ? value->as_bool() : absent;
}

// BLOOM's Split regex, as the reader's tokenizer_json_from_gguf writes it back (host/spec/gguf_tokenizer.cpp).
constexpr std::string_view kBloomSplit = " ?[^(\\s|[.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c])]+";

bool is_byte_level(const JsonValue& pre, bool use_regex) {
    return string_member(pre, "type") == "ByteLevel" && !bool_member(pre, "add_prefix_space", false) &&
           bool_member(pre, "use_regex", true) == use_regex;
}

// tokenizer.ggml.pre for the pre-tokenizer llama.cpp would recognise by its output.
std::string pre_tokenizer_name(const JsonValue& tokenizer) {
    const JsonValue* pre = member(tokenizer, "pre_tokenizer");
    if (pre != nullptr && is_byte_level(*pre, true)) {
        return "gpt-2";
    }
    if (pre != nullptr && string_member(*pre, "type") == "Sequence") {
        const JsonValue* parts = member(*pre, "pretokenizers");
        if (parts != nullptr && parts->is_array() && parts->size() == 2) {
            const JsonValue& split = parts->at(std::size_t{0});
            const JsonValue* pattern = member(split, "pattern");
            if (string_member(split, "type") == "Split" && pattern != nullptr &&
                string_member(*pattern, "Regex") == kBloomSplit && string_member(split, "behavior") == "Isolated" &&
                !bool_member(split, "invert", false) && is_byte_level(parts->at(std::size_t{1}), false)) {
                return "bloom";
            }
        }
    }
    const std::string shown = pre == nullptr ? std::string("none") : to_nlohmann(*pre).dump().substr(0, 200);
    throw Error(
        fmt::format("{}: pre_tokenizer {} is neither GPT-2's ByteLevel nor BLOOM's Split + ByteLevel, the "
                    "byte-level BPE pre-tokenizers vkformer writes to GGUF",
                    tokenizer.source(), shown));
}

bool looks_special(std::string_view token) {
    return token == "<pad>" || token == "<mask>" || token == "<2mass>" || token == "[@BOS@]" ||
           (token.starts_with("<|") && token.ends_with("|>")) ||
           (token.starts_with("<\uff5c") && token.ends_with("\uff5c>")) ||
           (token.starts_with("<unused") && token.ends_with(">"));
}

// "a b", with spaces inside a part written as U+0120 (gguf-py's SpecialVocab).
std::string merge_text(const JsonValue& merge) {
    if (merge.is_string()) {
        return merge.as_string();
    }
    if (!merge.is_array() || merge.size() != 2 || !merge.at(std::size_t{0}).is_string() ||
        !merge.at(std::size_t{1}).is_string()) {
        merge.fail("a merge must be \"a b\" or [\"a\", \"b\"]");
    }
    std::string text;
    for (std::size_t part = 0; part < 2; ++part) {
        if (part == 1) {
            text += ' ';
        }
        for (const char c : merge.at(part).as_string()) {
            text += c == ' ' ? std::string("\u0120") : std::string(1, c);
        }
    }
    return text;
}

struct Vocabulary {
    std::vector<std::string> tokens;
    std::vector<std::int32_t> types;
};

Vocabulary vocabulary(const JsonValue& tokenizer, std::uint32_t vocab_size) {
    const JsonValue& model = tokenizer.at("model");
    if (string_member(model, "type") != "BPE") {
        model.fail(fmt::format("model type '{}' is not BPE (vkformer writes byte-level BPE vocabularies to GGUF)",
                               string_member(model, "type")));
    }
    std::vector<std::optional<std::string>> by_id(vocab_size);
    std::vector<TokenType> types(vocab_size, TokenType::Normal);
    const auto place = [&](const JsonValue& where, std::uint64_t id, const std::string& token) {
        if (id >= vocab_size) {
            where.fail(fmt::format("token '{}' has id {}, beyond config.json's vocab_size {}", token, id, vocab_size));
        }
        by_id[id] = token;
    };
    for (const JsonMember& entry : model.at("vocab").as_object()) {
        place(entry.value, entry.value.as_uint64(), entry.key);
    }
    if (const JsonValue* added = member(tokenizer, "added_tokens"); added != nullptr) {
        for (const JsonValue& token : added->as_array()) {
            const std::uint64_t id = token.at("id").as_uint64();
            const std::string& content = token.at("content").as_string();
            place(token, id, content);
            types[id] = bool_member(token, "special", false) || looks_special(content) ? TokenType::Control
                                                                                       : TokenType::UserDefined;
        }
    }
    Vocabulary vocab;
    for (std::uint32_t id = 0; id < vocab_size; ++id) {
        vocab.tokens.push_back(by_id[id] ? *by_id[id] : fmt::format("[PAD{}]", id));
        vocab.types.push_back(static_cast<std::int32_t>(by_id[id] ? types[id] : TokenType::Unused));
    }
    return vocab;
}

// tokenizer_config.json's "<kind>_token": a string or {"content": ...}.
std::optional<std::string> configured_token(const JsonValue& config, std::string_view kind) {
    const JsonValue* entry = member(config, fmt::format("{}_token", kind));
    if (entry != nullptr && entry->is_string()) {
        return entry->as_string();
    }
    if (entry != nullptr && entry->is_object() && member(*entry, "content") != nullptr &&
        member(*entry, "content")->is_string()) {
        return member(*entry, "content")->as_string();
    }
    return std::nullopt;
}

std::optional<std::uint64_t> added_token_id(const JsonValue& tokenizer, const std::string& content) {
    if (const JsonValue* added = member(tokenizer, "added_tokens"); added != nullptr && added->is_array()) {
        for (const JsonValue& token : added->as_array()) {
            if (string_member(token, "content") == content && member(token, "id") != nullptr) {
                return token.at("id").as_uint64();
            }
        }
    }
    return std::nullopt;
}

// A TemplateProcessing post-processor's single template: whether it starts with BOS / ends with EOS.
void template_flags(const JsonValue& tokenizer, const std::map<std::string, std::string>& contents,
                    std::map<std::string, bool>& add) {
    const JsonValue* post = member(tokenizer, "post_processor");
    if (post == nullptr || !post->is_object()) {
        return;
    }
    const JsonValue* processors = member(*post, "processors");
    const auto visit = [&](const JsonValue& processor) {
        if (string_member(processor, "type") != "TemplateProcessing") {
            return;
        }
        const JsonValue* single = member(processor, "single");
        if (single == nullptr || !single->is_array() || single->size() < 2) {
            return;
        }
        const auto special = [](const JsonValue& item) {
            const JsonValue* s = member(item, "SpecialToken");
            return s != nullptr ? string_member(*s, "id") : std::string();
        };
        const auto content = [&](const char* kind) {
            const auto it = contents.find(kind);
            return it == contents.end() ? std::string() : it->second;
        };
        if (const std::string first = special(single->at(std::size_t{0})); !first.empty()) {
            add["bos"] = first == content("bos") || (contents.find("bos") == contents.end());
        }
        if (const std::string last = special(single->at(single->size() - 1)); !last.empty()) {
            add["eos"] = last == content("eos") || (contents.find("eos") == contents.end());
        }
    };
    if (processors != nullptr && processors->is_array()) {
        for (const JsonValue& p : processors->as_array()) {
            visit(p);
        }
    } else {
        visit(*post);
    }
}

void normalizer_flags(const JsonValue& normalizer, std::vector<GgufKeyValue>& out) {
    const std::string type = string_member(normalizer, "type");
    const auto set = [&](std::string_view key, bool value) {
        for (GgufKeyValue& kv : out) {
            if (kv.key == key) {
                kv.value = gguf_bool(value);
                return;
            }
        }
        out.push_back({std::string(key), gguf_bool(value)});
    };
    if (type == "Lowercase") {
        set(gguf_key::kNormalizerLowercase, true);
    } else if (type == "StripAccents") {
        set(gguf_key::kNormalizerStripAccents, true);
    } else if (type == "BertNormalizer") {
        if (const JsonValue* v = member(normalizer, "lowercase"); v != nullptr && v->is_bool()) {
            set(gguf_key::kNormalizerLowercase, v->as_bool());
        }
        if (const JsonValue* v = member(normalizer, "strip_accents"); v != nullptr && v->is_bool()) {
            set(gguf_key::kNormalizerStripAccents, v->as_bool());
        }
    } else if (type == "Sequence") {
        if (const JsonValue* list = member(normalizer, "normalizers"); list != nullptr && list->is_array()) {
            for (const JsonValue& n : list->as_array()) {
                normalizer_flags(n, out);
            }
        }
    }
}

// The chat template(s): tokenizer_config.json's chat_template, else chat_template.jinja, else
// chat_template.json's; a list of {"name", "template"} as the default plus named ones.
void chat_templates(const fs::path& dir, const JsonValue& config, std::vector<GgufKeyValue>& out) {
    std::optional<JsonValue> from_json;
    const JsonValue* value = member(config, "chat_template");
    std::string jinja;
    if (value == nullptr) {
        std::error_code ec;
        if (fs::is_regular_file(dir / "chat_template.jinja", ec)) {
            jinja = read_file(dir / "chat_template.jinja", std::uint64_t{16} << 20, "chat_template.jinja");
            out.push_back({std::string(gguf_key::kChatTemplate), gguf_string(jinja)});
            return;
        }
        from_json = read_if_present(dir / "chat_template.json");
        value = from_json ? member(*from_json, "chat_template") : nullptr;
    }
    if (value == nullptr || value->is_null()) {
        return;
    }
    if (value->is_string()) {
        out.push_back({std::string(gguf_key::kChatTemplate), gguf_string(value->as_string())});
        return;
    }
    if (!value->is_array()) {
        return;  // gguf-py ignores a chat_template of another type, with a warning
    }
    std::vector<std::string> names;
    for (const JsonValue& choice : value->as_array()) {
        std::string name = string_member(choice, "name");
        const JsonValue* text = member(choice, "template");
        for (char& c : name) {
            c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
        }
        if (name.empty() || text == nullptr || !text->is_string()) {
            continue;
        }
        if (name == "default") {
            out.push_back({std::string(gguf_key::kChatTemplate), gguf_string(text->as_string())});
        } else {
            out.push_back({fmt::format("{}.{}", gguf_key::kChatTemplate, name), gguf_string(text->as_string())});
            names.push_back(name);
        }
    }
    if (!names.empty()) {
        out.push_back({std::string(gguf_key::kChatTemplates), gguf_string_array(std::move(names))});
    }
}

}  // namespace

std::vector<GgufKeyValue> gguf_tokenizer_metadata(const fs::path& dir, std::uint32_t vocab_size) {
    const std::optional<JsonValue> tokenizer = read_if_present(dir / "tokenizer.json");
    if (!tokenizer) {
        return {};
    }
    const std::optional<JsonValue> tokenizer_config = read_if_present(dir / "tokenizer_config.json");
    const JsonValue config = read_json_file(dir / "config.json");
    const std::string pre = pre_tokenizer_name(*tokenizer);
    Vocabulary vocab = vocabulary(*tokenizer, vocab_size);

    std::vector<GgufKeyValue> out;
    out.push_back({std::string(gguf_key::kTokenizerModel), gguf_string("gpt2")});
    out.push_back({std::string(gguf_key::kTokenizerPre), gguf_string(pre)});
    out.push_back({std::string(gguf_key::kTokens), gguf_string_array(std::move(vocab.tokens))});
    out.push_back({std::string(gguf_key::kTokenType), gguf_int32_array(vocab.types)});
    std::vector<std::string> merges;
    if (const JsonValue* list = member(tokenizer->at("model"), "merges"); list != nullptr && list->is_array()) {
        for (const JsonValue& merge : list->as_array()) {
            merges.push_back(merge_text(merge));
        }
    }
    out.push_back({std::string(gguf_key::kMerges), gguf_string_array(std::move(merges))});

    // Special tokens: tokenizer_config.json's first (by content among the added tokens), then
    // config.json's ids; the first found wins.
    std::map<std::string, std::string> contents;
    std::vector<std::pair<std::string, std::uint64_t>> ids;
    const auto set_id = [&](std::string_view kind, std::uint64_t id) {
        for (const auto& [k, _] : ids) {
            if (k == kind) {
                return;
            }
        }
        ids.emplace_back(std::string(kind), id);
    };
    std::map<std::string, bool> add;
    if (tokenizer_config) {
        for (const std::string_view kind : kSpecialKinds) {
            if (auto content = configured_token(*tokenizer_config, kind)) {
                contents[std::string(kind)] = *content;
            }
        }
        // gguf-py: no bos but a cls means the cls is the bos; no eos but a sep, the sep the eos.
        if (!contents.contains("bos") && contents.contains("cls")) {
            contents["bos"] = contents["cls"];
        }
        if (!contents.contains("eos") && contents.contains("sep")) {
            contents["eos"] = contents["sep"];
        }
    }
    template_flags(*tokenizer, contents, add);
    if (tokenizer_config) {
        for (const std::string_view kind : kSpecialKinds) {
            if (const JsonValue* flag = member(*tokenizer_config, fmt::format("add_{}_token", kind));
                flag != nullptr && flag->is_bool()) {
                add[std::string(kind)] = flag->as_bool();
            }
            if (const auto it = contents.find(std::string(kind)); it != contents.end()) {
                if (const auto id = added_token_id(*tokenizer, it->second)) {
                    set_id(kind, *id);
                }
            }
        }
    }
    for (const std::string_view kind : kSpecialKinds) {
        if (const JsonValue* id = member(config, fmt::format("{}_token_id", kind)); id != nullptr && id->is_number()) {
            set_id(kind, id->as_uint64());
        }
    }
    for (const auto& [kind, id] : ids) {
        if (has_id_key(kind)) {
            if (id > std::numeric_limits<std::uint32_t>::max()) {
                throw Error(fmt::format("{}: the {} token id {} is not a uint32", dir.string(), kind, id));
            }
            out.push_back({gguf_key::special_token_id_key(kind), gguf_uint32(static_cast<std::uint32_t>(id))});
        }
    }
    for (const std::string_view kind : kSpecialKinds) {
        if (const auto it = add.find(std::string(kind)); it != add.end() && has_add_key(kind)) {
            out.push_back({gguf_key::add_special_token_key(kind), gguf_bool(it->second)});
        }
    }
    if (tokenizer_config) {
        chat_templates(dir, *tokenizer_config, out);
    }
    if (const JsonValue* normalizer = member(*tokenizer, "normalizer"); normalizer != nullptr) {
        normalizer_flags(*normalizer, out);
    }
    return out;
}

}  // namespace vkf
