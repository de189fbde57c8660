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

}  // namespace

nlohmann::ordered_json Usage::json() const {
    return {{"prompt_tokens", prompt_tokens},
            {"completion_tokens", completion_tokens},
            {"total_tokens", prompt_tokens + completion_tokens}};
}

nlohmann::ordered_json completion_body(const ResponseHead& head, const std::vector<Choice>& choices,
                                       const Usage& usage) {
    json body = head_json(head, false);
    body["choices"] = json::array();
    for (const Choice& c : choices) {
        if (head.endpoint == Endpoint::Chat) {
            body["choices"].push_back({{"index", c.index},
                                       {"message", {{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}}},
                                       {"logprobs", nullptr},
                                       {"finish_reason", c.finish_reason}});
        } else {
            body["choices"].push_back(
                {{"index", c.index}, {"text", c.text}, {"logprobs", nullptr}, {"finish_reason", c.finish_reason}});
        }
    }
    body["usage"] = usage.json();
    return body;
}

nlohmann::ordered_json chunk_body(const ResponseHead& head, std::uint32_t index, const std::string& text,
                                  const std::optional<std::string>& finish_reason, bool role_only) {
    json body = head_json(head, true);
    json choice;
    if (head.endpoint == Endpoint::Chat) {
        json delta = json::object();
        if (role_only) {
            delta = {{"role", "assistant"}, {"content", ""}};
        } else if (!text.empty() || !finish_reason) {
            delta = {{"content", text}};
        }
        choice = {
            {"index", index}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", finish_json(finish_reason)}};
    } else {
        choice = {
            {"index", index}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", finish_json(finish_reason)}};
    }
    body["choices"] = json::array({choice});
    return body;
}

nlohmann::ordered_json usage_chunk_body(const ResponseHead& head, const Usage& usage) {
    json body = head_json(head, true);
    body["choices"] = json::array();
    body["usage"] = usage.json();
    return body;
}

}  // namespace vkf::serve
