#include "host/serve/responses.hpp"

namespace vkf::serve {
namespace {

using json = nlohmann::ordered_json;

json head_json(const ResponseHead& head, bool chunk) {
    const char* object =
        head.endpoint == Endpoint::Chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
    return {{"id", head.id},
            {"object", object},
            {"created", head.created},
            {"model", head.model},
            {"system_fingerprint", "vkformer"}};
}

json finish_json(const std::optional<std::string>& reason) {
    return reason ? json(*reason) : json(nullptr);
}

json bytes_json(const std::string& token) {
    json bytes = json::array();
    for (char c : token) {
        bytes.push_back(static_cast<std::uint8_t>(c));
    }
    return bytes;
}

// OpenAI's tool_calls; a streamed delta numbers them (`index`).
json tool_calls_json(const std::vector<ToolCall>& calls, bool delta) {
    json out = json::array();
    for (std::size_t i = 0; i < calls.size(); ++i) {
        json call = delta ? json{{"index", i}} : json::object();
        call["id"] = calls[i].id;
        call["type"] = "function";
        call["function"] = {{"name", calls[i].name}, {"arguments", calls[i].arguments}};
        out.push_back(std::move(call));
    }
    return out;
}

}  // namespace

nlohmann::ordered_json logprobs_json(Endpoint endpoint, const std::vector<LogprobEntry>& entries) {
    if (endpoint == Endpoint::Chat) {
        json content = json::array();
        for (const LogprobEntry& e : entries) {
            json top = json::array();
            for (const auto& [token, logprob] : e.top) {
                top.push_back({{"token", token}, {"logprob", logprob}, {"bytes", bytes_json(token)}});
            }
            content.push_back(
                {{"token", e.token}, {"logprob", e.logprob}, {"bytes", bytes_json(e.token)}, {"top_logprobs", top}});
        }
        return {{"content", std::move(content)}, {"refusal", nullptr}};
    }
    json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(), offsets = json::array();
    for (const LogprobEntry& e : entries) {
        tokens.push_back(e.token);
        token_logprobs.push_back(e.unscored ? json(nullptr) : json(e.logprob));
        json top = json::object();
        for (const auto& [token, logprob] : e.top) {
            top[token] = logprob;
        }
        top_logprobs.push_back(e.unscored ? json(nullptr) : std::move(top));
        offsets.push_back(e.text_offset);
    }
    return {{"tokens", std::move(tokens)},
            {"token_logprobs", std::move(token_logprobs)},
            {"top_logprobs", std::move(top_logprobs)},
            {"text_offset", std::move(offsets)}};
}

nlohmann::ordered_json Usage::json() const {
    return {{"prompt_tokens", prompt_tokens},
            {"completion_tokens", completion_tokens},
            {"total_tokens", prompt_tokens + completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
}

nlohmann::ordered_json completion_body(const ResponseHead& head, const std::vector<Choice>& choices,
                                       const Usage& usage) {
    json body = head_json(head, false);
    body["choices"] = json::array();
    for (const Choice& c : choices) {
        const json logprobs = c.logprobs ? logprobs_json(head.endpoint, *c.logprobs) : json(nullptr);
        if (head.endpoint == Endpoint::Chat) {
            json message = {{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}};
            if (!c.tool_calls.empty()) {
                message["content"] = nullptr;
                message["tool_calls"] = tool_calls_json(c.tool_calls, false);
            }
            body["choices"].push_back({{"index", c.index},
                                       {"message", std::move(message)},
                                       {"logprobs", logprobs},
                                       {"finish_reason", c.finish_reason}});
        } else {
            body["choices"].push_back(
                {{"index", c.index}, {"text", c.text}, {"logprobs", logprobs}, {"finish_reason", c.finish_reason}});
        }
    }
    body["usage"] = usage.json();
    return body;
}

nlohmann::ordered_json chunk_body(const ResponseHead& head, std::uint32_t index, const std::string& text,
                                  const std::optional<std::string>& finish_reason, bool role_only,
                                  const std::vector<LogprobEntry>* logprobs) {
    json body = head_json(head, true);
    json choice;
    const json lp = logprobs != nullptr ? logprobs_json(head.endpoint, *logprobs) : json(nullptr);
    if (head.endpoint == Endpoint::Chat) {
        json delta = json::object();
        if (role_only) {
            delta = {{"role", "assistant"}, {"content", ""}};
        } else if (!text.empty() || !finish_reason) {
            delta = {{"content", text}};
        }
        choice = {{"index", index}, {"delta", delta}, {"logprobs", lp}, {"finish_reason", finish_json(finish_reason)}};
    } else {
        choice = {{"index", index}, {"text", text}, {"logprobs", lp}, {"finish_reason", finish_json(finish_reason)}};
    }
    body["choices"] = json::array({choice});
    return body;
}

nlohmann::ordered_json tool_calls_chunk_body(const ResponseHead& head, std::uint32_t index,
                                             const std::vector<ToolCall>& calls) {
    json body = head_json(head, true);
    body["choices"] = json::array({{{"index", index},
                                    {"delta", {{"tool_calls", tool_calls_json(calls, true)}}},
                                    {"logprobs", nullptr},
                                    {"finish_reason", nullptr}}});
    return body;
}

nlohmann::ordered_json usage_chunk_body(const ResponseHead& head, const Usage& usage) {
    json body = head_json(head, true);
    body["choices"] = json::array();
    body["usage"] = usage.json();
    return body;
}

}  // namespace vkf::serve
