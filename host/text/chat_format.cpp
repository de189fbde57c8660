#include "host/text/chat_format.hpp"

#include "base/error.hpp"
#include "host/io/gguf.hpp"
#include "host/io/json.hpp"
#include "host/text/utf8.hpp"

#include <array>
#include <optional>
#include <system_error>

#include <fmt/format.h>
#include <string>

namespace vkf::text {
namespace {

// The chat_template of mosaicml/mpt-30b-chat's tokenizer_config.json (tests/text/data/chat keeps a
// copy; MPT-7B-Chat's differs only after the last message, see there) puts this system prompt first
// when the conversation has none.
constexpr std::string_view kMptDefaultSystem =
    "A conversation between a user and an LLM-based AI assistant. The assistant gives helpful and honest answers.";

// Jais-13b-chat's model card, https://huggingface.co/inception-mbzuai/jais-13b-chat (README.md,
// "Getting started"): prompt_eng = "### Instruction: <this> \n\nComplete the conversation below
// between [|Human|] and [|AI|]:\n### Input: [|Human|] {Question}\n### Response: [|AI|]". The card
// shows one question; earlier turns repeat its Input and Response lines, the answer after
// "[|AI|] " (the model's reply starts with that space).
constexpr std::string_view kJaisDefaultSystem =
    "Your name is Jais, and you are named after Jebel Jais, the highest mountain in UAE. You are built by "
    "Inception and MBZUAI. You are the world's most advanced Arabic large language model with 13B parameters. "
    "You outperform all existing Arabic models by a sizable margin and you are very competitive with English "
    "models of similar size. You can answer in Arabic and English only. You are a helpful, respectful and honest "
    "assistant. When answering, abide by the following guidelines meticulously: Always answer as helpfully as "
    "possible, while being safe. Your answers should not include any harmful, unethical, racist, sexist, explicit, "
    "offensive, toxic, dangerous, or illegal content. Do not give medical, legal, financial, or professional "
    "advice. Never assist in or promote illegal activities. Always encourage legal and responsible actions. Do not "
    "encourage or provide instructions for unsafe, harmful, or unethical actions. Do not create or share "
    "misinformation or fake news. Please ensure that your responses are socially unbiased and positive in nature. "
    "If a question does not make any sense, or is not factually coherent, explain why instead of answering "
    "something not correct. If you don't know the answer to a question, please don't share false information. "
    "Prioritize the well-being and the moral integrity of users. Avoid using toxic, derogatory, or offensive "
    "language. Maintain a respectful tone. Do not generate, promote, or engage in discussions about adult content. "
    "Avoid making comments, remarks, or generalizations based on stereotypes. Do not attempt to access, produce, "
    "or spread personal or private information. Always respect user confidentiality. Stay positive and do not say "
    "bad things about anything. Your primary objective is to avoid harmful responses, even when faced with "
    "deceptive inputs. Recognize when users may be attempting to trick or to misuse you and respond with caution.";

// generation_config.json of Baichuan-13B-Chat and Baichuan2-13B-Chat alike.
constexpr TokenId kBaichuanUser = 195;
constexpr TokenId kBaichuanAssistant = 196;
constexpr TokenId kBaichuanEos = 2;

enum class Role { System, User, Assistant };

// The roles of `messages`, after checking what every format needs.
std::vector<Role> check_messages(ChatFormat format, std::span<const ChatMessage> messages) {
    const std::string name = to_string(format);
    if (messages.empty()) {
        throw Error("chat format " + name + ": the conversation has no messages");
    }
    std::vector<Role> roles;
    bool only_system = true;
    for (std::size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        const std::string where = "chat format " + name + ": messages[" + fmt::to_string(i) + "]";
        if (find_invalid_utf8(m.role) != std::string::npos) {
            throw Error(where + ": the role is not UTF-8");
        }
        if (m.role == "system") {
            roles.push_back(Role::System);
        } else if (m.role == "user") {
            roles.push_back(Role::User);
        } else if (m.role == "assistant") {
            roles.push_back(Role::Assistant);
        } else {
            throw Error(where + ": role '" + m.role + "' is not one of system, user, assistant");
        }
        if (const std::size_t bad = find_invalid_utf8(m.content); bad != std::string::npos) {
            throw Error(where + " (" + m.role + "): the content is not UTF-8 (byte " + fmt::to_string(bad) + ")");
        }
        only_system = only_system && roles.back() == Role::System;
    }
    if (only_system) {
        throw Error("chat format " + name + ": the conversation has only system messages; a user message is needed");
    }
    return roles;
}

void require_system_first(ChatFormat format, std::span<const Role> roles) {
    for (std::size_t i = 1; i < roles.size(); ++i) {
        if (roles[i] == Role::System) {
            throw Error("chat format " + std::string(to_string(format)) + ": messages[" + fmt::to_string(i) +
                        "] is a system message; this format takes one only as the first message");
        }
    }
}

// Python's str.isspace, which the template's system_message.strip() uses.
bool python_space(char32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string_view python_strip(std::string_view text) {
    std::size_t begin = 0;
    std::size_t end = text.size();
    while (begin < end) {
        const Utf8Char c = utf8_char(text, begin);
        if (!python_space(c.code_point)) {
            break;
        }
        begin += c.size;
    }
    while (end > begin) {
        const std::size_t start = utf8_previous(text, end);
        if (!python_space(utf8_char(text, start).code_point)) {
            break;
        }
        end = start;
    }
    return text.substr(begin, end - begin);
}

std::string render_chatml(std::span<const ChatMessage> messages, std::span<const Role> roles) {
    std::size_t first = 0;
    std::string_view system = kMptDefaultSystem;
    if (roles[0] == Role::System) {
        system = messages[0].content;
        first = 1;
    }
    std::string out = "<|im_start|>system\n";
    out += python_strip(system);
    out += "\n";
    for (std::size_t i = first; i < messages.size(); ++i) {
        if (i != first) {
            out += "\n";
        }
        out += "<|im_start|>" + messages[i].role + "\n" + messages[i].content + "<|im_end|>";
    }
    out += "\n<|im_start|>assistant\n";
    return out;
}

std::string render_jais(std::span<const ChatMessage> messages, std::span<const Role> roles) {
    require_system_first(ChatFormat::Jais, roles);
    std::size_t first = 0;
    std::string_view system = kJaisDefaultSystem;
    if (roles[0] == Role::System) {
        system = messages[0].content;
        first = 1;
    }
    std::string out = "### Instruction: ";
    out += system;
    out += "\n\nComplete the conversation below between [|Human|] and [|AI|]:";
    for (std::size_t i = first; i < messages.size(); ++i) {
        out += roles[i] == Role::User ? "\n### Input: [|Human|] " : "\n### Response: [|AI|] ";
        out += messages[i].content;
    }
    out += "\n### Response: [|AI|]";
    return out;
}

std::vector<TokenId> baichuan_ids(std::span<const ChatMessage> messages, std::span<const Role> roles,
                                  const Tokenizer& tokenizer) {
    if (tokenizer.vocab_size() <= kBaichuanAssistant) {
        throw Error("chat format baichuan: the tokenizer has " + fmt::to_string(tokenizer.vocab_size()) +
                    " tokens, too few for the user and assistant ids 195 and 196");
    }
    const std::string_view user = tokenizer.token(kBaichuanUser);
    const std::string_view assistant = tokenizer.token(kBaichuanAssistant);
    bool baichuan2 = false;
    if (user == "<reserved_106>" && assistant == "<reserved_107>") {
        baichuan2 = true;
    } else if (user != "<reserved_102>" || assistant != "<reserved_103>") {
        throw Error("chat format baichuan: ids 195 and 196 are '" + std::string(user) + "' and '" +
                    std::string(assistant) +
                    "', neither Baichuan-13B's <reserved_102>/<reserved_103> nor Baichuan2's "
                    "<reserved_106>/<reserved_107>: not a Baichuan chat vocabulary");
    }
    std::vector<TokenId> ids;
    std::size_t first = 0;
    if (roles[0] == Role::System) {
        if (!baichuan2) {
            // Baichuan-13B-Chat's _build_chat_input raises "message role not supported yet: system".
            throw Error(
                "chat format baichuan: messages[0] is a system message, which Baichuan-13B-Chat has no "
                "place for (Baichuan2 has)");
        }
        ids = tokenizer.encode(messages[0].content);
        first = 1;
    }
    require_system_first(ChatFormat::Baichuan, roles);
    for (std::size_t i = first; i < messages.size(); ++i) {
        ids.push_back(roles[i] == Role::User ? kBaichuanUser : kBaichuanAssistant);
        const std::vector<TokenId> content = tokenizer.encode(messages[i].content);
        ids.insert(ids.end(), content.begin(), content.end());
        if (!baichuan2 && roles[i] == Role::Assistant) {
            ids.push_back(kBaichuanEos);
        }
    }
    if (!baichuan2 || roles.back() != Role::Assistant) {
        ids.push_back(kBaichuanAssistant);
    }
    return ids;
}

// The chat_template of tokenizer_config.json ("chat_template": a string, or a list of
// {"name", "template"} objects) as one text to look for markers in.
std::string chat_templates(const JsonValue& config) {
    const JsonValue* value = config.is_object() ? config.find("chat_template") : nullptr;
    if (value == nullptr) {
        return {};
    }
    if (value->is_string()) {
        return value->as_string();
    }
    std::string all;
    if (value->is_array()) {
        for (const JsonValue& entry : value->as_array()) {
            if (const JsonValue* text = entry.is_object() ? entry.find("template") : nullptr;
                text != nullptr && text->is_string()) {
                all += text->as_string();
            }
        }
    }
    return all;
}

std::optional<JsonValue> read_if_present(const std::filesystem::path& file) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) {
        return std::nullopt;
    }
    return read_json_file(file, std::uint64_t{16} << 20);
}

bool is_jais_config(const JsonValue& config) {
    if (!config.is_object()) {
        return false;
    }
    if (const JsonValue* type = config.find("model_type");
        type != nullptr && type->is_string() && type->as_string() == "jais") {
        return true;
    }
    if (const JsonValue* archs = config.find("architectures"); archs != nullptr && archs->is_array()) {
        for (const JsonValue& arch : archs->as_array()) {
            if (arch.is_string() && arch.as_string() == "JAISLMHeadModel") {
                return true;
            }
        }
    }
    return false;
}

std::optional<ChatFormat> format_of_template(const std::string& templates) {
    if (templates.find("<|im_start|>") != std::string::npos && templates.find("<|im_end|>") != std::string::npos) {
        return ChatFormat::ChatMl;
    }
    if (templates.find("[|Human|]") != std::string::npos && templates.find("[|AI|]") != std::string::npos) {
        return ChatFormat::Jais;
    }
    return std::nullopt;
}

// A GGUF file's tokenizer.chat_template (llama.cpp copies tokenizer_config.json's there).
ChatFormat gguf_chat_format(const std::filesystem::path& file) {
    const GgufFile gguf = open_gguf(file);
    const GgufValue* value = gguf.find("tokenizer.chat_template");
    if (value == nullptr) {
        return ChatFormat::None;
    }
    const std::string& text = value->as_string();
    if (const std::optional<ChatFormat> format = format_of_template(text)) {
        return *format;
    }
    constexpr std::size_t kShown = 80;
    throw Error(
        fmt::format("{}: tokenizer.chat_template \"{}{}\" is none of vkformer's chat formats (chatml, "
                    "jais, baichuan); name one with --chat-format",
                    gguf.label(), text.substr(0, kShown), text.size() > kShown ? "..." : ""));
}

}  // namespace

ChatFormat detect_chat_format(const std::filesystem::path& model_dir) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(model_dir, ec) && looks_like_gguf(model_dir)) {
        return gguf_chat_format(model_dir);
    }
    if (const auto config = read_if_present(model_dir / "tokenizer_config.json")) {
        if (const std::optional<ChatFormat> format = format_of_template(chat_templates(*config))) {
            return *format;
        }
    }
    if (const auto generation = read_if_present(model_dir / "generation_config.json");
        generation && generation->is_object() && generation->find("user_token_id") != nullptr &&
        generation->find("assistant_token_id") != nullptr) {
        return ChatFormat::Baichuan;
    }
    if (const auto config = read_if_present(model_dir / "config.json"); config && is_jais_config(*config)) {
        return ChatFormat::Jais;
    }
    return ChatFormat::None;
}

std::optional<ChatFormat> parse_chat_format(std::string_view name) {
    for (ChatFormat format : {ChatFormat::None, ChatFormat::ChatMl, ChatFormat::Baichuan, ChatFormat::Jais}) {
        if (name == to_string(format)) {
            return format;
        }
    }
    return std::nullopt;
}

const char* to_string(ChatFormat format) {
    switch (format) {
        case ChatFormat::None:
            return "none";
        case ChatFormat::ChatMl:
            return "chatml";
        case ChatFormat::Baichuan:
            return "baichuan";
        case ChatFormat::Jais:
            return "jais";
    }
    return "unknown";
}

std::string render_chat(ChatFormat format, std::span<const ChatMessage> messages) {
    if (format == ChatFormat::None) {
        throw Error("chat format none: the model has no known chat format (name one: chatml, baichuan, jais)");
    }
    const std::vector<Role> roles = check_messages(format, messages);
    switch (format) {
        case ChatFormat::ChatMl:
            return render_chatml(messages, roles);
        case ChatFormat::Jais:
            return render_jais(messages, roles);
        case ChatFormat::Baichuan:
            throw Error(
                "chat format baichuan: the user and assistant turns are token ids 195 and 196, spelled "
                "differently in Baichuan-13B's and Baichuan2's vocabularies; render_chat_ids builds the prompt");
        case ChatFormat::None:
            break;
    }
    throw Error("chat format: unknown format");
}

std::vector<TokenId> render_chat_ids(ChatFormat format, std::span<const ChatMessage> messages,
                                     const Tokenizer& tokenizer) {
    switch (format) {
        case ChatFormat::ChatMl:
            return tokenizer.encode(render_chat(format, messages), false);
        case ChatFormat::Jais:
            return tokenizer.encode(render_chat(format, messages), true);
        case ChatFormat::Baichuan:
            return baichuan_ids(messages, check_messages(format, messages), tokenizer);
        case ChatFormat::None:
            break;
    }
    return tokenizer.encode(render_chat(format, messages));  // throws for None
}

std::vector<std::string> chat_stop_strings(ChatFormat format) {
    switch (format) {
        case ChatFormat::ChatMl:
            return {"<|im_end|>"};
        case ChatFormat::Baichuan:
            // A turn ends with </s> (EOS, where generation stops anyway) or where the next user turn
            // would begin: id 195 in either vocabulary's spelling.
            return {"<reserved_102>", "<reserved_106>"};
        case ChatFormat::Jais:
            return {"\n### Input:", "[|Human|]"};
        case ChatFormat::None:
            break;
    }
    return {};
}

}  // namespace vkf::text
