#include "host/serve/tool_calls.hpp"

#include "base/error.hpp"
#include "host/grammar/grammar.hpp"
#include "host/grammar/json_schema.hpp"
#include "host/serve/api_error.hpp"
#include "host/serve/request_fields.hpp"

#include <fmt/format.h>

#include <atomic>
#include <random>

namespace vkf::serve {
using namespace fields;
using json = nlohmann::ordered_json;

namespace {

ToolFunction read_function(const JsonValue& tool, const std::string& param) {
    if (!tool.is_object()) {
        wrong_type(param, tool, "an object");
    }
    const JsonValue* type = field(tool, "type");
    if (type == nullptr || get_string(*type, param + ".type") != "function") {
        throw invalid_request(param + ".type must be \"function\"", param + ".type");
    }
    const JsonValue* function = field(tool, "function");
    if (function == nullptr || !function->is_object()) {
        throw invalid_request(param + ".function must be an object", param + ".function");
    }
    ToolFunction f;
    for (const JsonMember& m : function->as_object()) {
        const std::string p = fmt::format("{}.function.{}", param, m.key);
        if (m.key == "name") {
            f.name = get_string(m.value, p);
        } else if (m.key == "description") {
            f.description = get_string(m.value, p);
        } else if (m.key == "strict") {
            get_bool(m.value, p);  // the grammar is always strict
        } else if (m.key == "parameters") {
            if (!m.value.is_object()) {
                wrong_type(p, m.value, "a JSON schema (an object)");
            }
            f.parameters = to_nlohmann(m.value);
        } else {
            throw invalid_request(fmt::format("{} is not a field of a function", p), p);
        }
    }
    if (f.name.empty()) {
        throw invalid_request(param + ".function.name is missing", param + ".function.name",
                              "missing_required_parameter");
    }
    if (f.parameters.is_null()) {
        f.parameters = json::object();
    }
    return f;
}

// The schema of a call: {"name": const, "arguments": parameters}, name first.
json call_schema(const ToolFunction& f) {
    return {{"type", "object"},
            {"properties", {{"name", {{"const", f.name}}}, {"arguments", f.parameters}}},
            {"required", {"name", "arguments"}},
            {"additionalProperties", false}};
}

std::string call_grammar(const ToolRequest& t, const std::string& param) {
    json alternatives = json::array();
    for (const ToolFunction& f : t.functions) {
        if (t.choice != ToolRequest::Choice::Named || f.name == t.named) {
            alternatives.push_back(call_schema(f));
        }
    }
    const json schema = {{"anyOf", alternatives}};
    std::string gbnf;
    try {
        gbnf = grammar::json_schema_to_gbnf(parse_json(schema.dump(), "tools"));
        if (t.choice == ToolRequest::Choice::Auto) {
            // A call, or text that does not start one.
            gbnf.replace(0, std::string_view("root ::=").size(), "call ::=");
            gbnf += "root ::= call | [^{] .*\n";
        }
        grammar::parse_gbnf(gbnf);
    } catch (const Error& e) {
        throw invalid_request(fmt::format("{}: {}", param, e.what()), param, "unsupported_parameter");
    }
    return gbnf;
}

std::string call_id() {
    static std::atomic<std::uint64_t> counter = std::random_device{}();
    return fmt::format("call_{:016x}", counter.fetch_add(0x9E3779B97F4A7C15ull));
}

}  // namespace

std::optional<ToolRequest> parse_tools(const JsonValue& doc, Endpoint endpoint) {
    const JsonValue* tools = field(doc, "tools");
    const JsonValue* choice = field(doc, "tool_choice");
    const JsonValue* parallel = field(doc, "parallel_tool_calls");
    if (parallel != nullptr) {
        get_bool(*parallel, "parallel_tool_calls");  // one call per answer either way
    }
    if (tools == nullptr) {
        if (choice != nullptr && !(choice->is_string() && choice->as_string() == "none")) {
            throw invalid_request("tool_choice needs tools", "tool_choice");
        }
        return std::nullopt;
    }
    if (endpoint != Endpoint::Chat) {
        throw invalid_request("tools is a chat field (/v1/chat/completions)", "tools", "unsupported_parameter");
    }
    if (!tools->is_array() || tools->size() == 0) {
        wrong_type("tools", *tools, "a non-empty array of tools");
    }
    ToolRequest t;
    for (std::size_t i = 0; i < tools->size(); ++i) {
        t.functions.push_back(read_function(tools->at(i), fmt::format("tools[{}]", i)));
    }
    if (choice != nullptr) {
        if (choice->is_string()) {
            const std::string& c = choice->as_string();
            if (c == "none" || c == "auto" || c == "required") {
                t.choice = c == "none"   ? ToolRequest::Choice::None
                           : c == "auto" ? ToolRequest::Choice::Auto
                                         : ToolRequest::Choice::Required;
            } else {
                throw invalid_request(fmt::format("tool_choice '{}' is not none, auto, required or an object", c),
                                      "tool_choice");
            }
        } else if (choice->is_object()) {
            const JsonValue* function = field(*choice, "function");
            const JsonValue* name = function != nullptr && function->is_object() ? field(*function, "name") : nullptr;
            if (name == nullptr) {
                throw invalid_request("tool_choice.function.name is missing", "tool_choice.function.name",
                                      "missing_required_parameter");
            }
            t.choice = ToolRequest::Choice::Named;
            t.named = get_string(*name, "tool_choice.function.name");
            const bool known = std::any_of(t.functions.begin(), t.functions.end(),
                                           [&](const ToolFunction& f) { return f.name == t.named; });
            if (!known) {
                throw invalid_request(fmt::format("tool_choice names '{}', which is not one of the tools", t.named),
                                      "tool_choice.function.name");
            }
        } else {
            wrong_type("tool_choice", *choice, "\"none\", \"auto\", \"required\" or a function");
        }
    }
    if (t.choice != ToolRequest::Choice::None) {
        t.grammar = call_grammar(t, "tools");
    }
    return t;
}

std::optional<ChatMessageIn> tool_history_message(const JsonValue& message, const std::string& param) {
    const JsonValue* role = field(message, "role");
    if (role == nullptr || !role->is_string()) {
        return std::nullopt;
    }
    if (role->as_string() == "tool") {
        const JsonValue* id = field(message, "tool_call_id");
        const JsonValue* content = field(message, "content");
        if (content == nullptr) {
            throw invalid_request(param + ".content is missing", param + ".content", "missing_required_parameter");
        }
        const std::string call = id != nullptr ? get_string(*id, param + ".tool_call_id") : std::string();
        const std::string text = content->is_string() ? content->as_string() : to_nlohmann(*content).dump();
        return ChatMessageIn{.role = "user", .content = fmt::format("Result of tool call {}: {}", call, text)};
    }
    const JsonValue* calls = field(message, "tool_calls");
    if (role->as_string() != "assistant" || calls == nullptr) {
        return std::nullopt;
    }
    if (!calls->is_array()) {
        wrong_type(param + ".tool_calls", *calls, "an array");
    }
    std::string text;
    for (std::size_t i = 0; i < calls->size(); ++i) {
        const std::string p = fmt::format("{}.tool_calls[{}]", param, i);
        const JsonValue& call = calls->at(i);
        const JsonValue* function = call.is_object() ? field(call, "function") : nullptr;
        if (function == nullptr || !function->is_object() || field(*function, "name") == nullptr) {
            throw invalid_request(p + ".function.name is missing", p + ".function.name", "missing_required_parameter");
        }
        const JsonValue* arguments = field(*function, "arguments");
        const std::string args = arguments == nullptr ? "{}" : get_string(*arguments, p + ".function.arguments");
        text += fmt::format("{}{{\"name\": {}, \"arguments\": {}}}", i == 0 ? "" : "\n",
                            json(get_string(*field(*function, "name"), p + ".function.name")).dump(), args);
    }
    return ChatMessageIn{.role = "assistant", .content = text};
}

std::string tools_prompt(const ToolRequest& t) {
    std::string out = "You can call these tools:\n";
    for (const ToolFunction& f : t.functions) {
        out += fmt::format("- {}: {} Parameters (JSON schema): {}\n", f.name, f.description, f.parameters.dump());
    }
    return out + "To call one, answer with only {\"name\": the tool's name, \"arguments\": its arguments}.";
}

void add_tools_prompt(const ToolRequest& t, std::vector<ChatMessageIn>& messages) {
    if (t.choice == ToolRequest::Choice::None) {
        return;
    }
    if (!messages.empty() && messages.front().role == "system") {
        messages.front().content += "\n\n" + tools_prompt(t);
    } else {
        messages.insert(messages.begin(), ChatMessageIn{.role = "system", .content = tools_prompt(t)});
    }
}

std::optional<ToolCall> parse_tool_call(const std::string& text, const ToolRequest& t) {
    if (t.choice == ToolRequest::Choice::None || text.empty() || text.front() != '{') {
        return std::nullopt;
    }
    const json call = json::parse(text, nullptr, false);
    if (call.is_discarded() || !call.is_object() || !call.contains("name") || !call.contains("arguments") ||
        !call["name"].is_string()) {
        return std::nullopt;  // cut short by max_tokens or a stop string: left as text
    }
    return ToolCall{.id = call_id(), .name = call["name"].get<std::string>(), .arguments = call["arguments"].dump()};
}

}  // namespace vkf::serve
