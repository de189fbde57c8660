#include "host/serve/request_field_table.hpp"

#include "host/serve/api_error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>

namespace vkf::serve {

namespace {

constexpr bool kC = true;   // a field of /v1/completions
constexpr bool kCh = true;  // a field of /v1/chat/completions
constexpr FieldUse kHonoured = FieldUse::Honoured;
constexpr FieldUse kRefused = FieldUse::Refused;
constexpr FieldUse kIgnored = FieldUse::Ignored;

// OpenAI's CreateCompletionRequest and CreateChatCompletionRequest (tests/serve/data's
// openapi.yaml; server_clients_test.py checks that every one of their properties is here),
// llama-server's and vLLM's sampler fields, and vkf-server's own (ignore_eos).
constexpr std::array kRequestFields = std::to_array<RequestField>({
    {"model", kC, kCh, kHonoured, ""},
    {"prompt", kC, false, kHonoured, ""},
    {"messages", false, kCh, kHonoured, ""},
    {"max_tokens", kC, kCh, kHonoured, ""},
    {"max_completion_tokens", false, kCh, kHonoured, ""},
    {"temperature", kC, kCh, kHonoured, ""},
    {"top_p", kC, kCh, kHonoured, ""},
    {"top_k", kC, kCh, kHonoured, ""},
    {"min_p", kC, kCh, kHonoured, ""},
    {"typical_p", kC, kCh, kHonoured, ""},
    {"repetition_penalty", kC, kCh, kHonoured, ""},
    {"presence_penalty", kC, kCh, kHonoured, ""},
    {"frequency_penalty", kC, kCh, kHonoured, ""},
    {"repeat_last_n", kC, kCh, kHonoured, ""},
    {"logit_bias", kC, kCh, kHonoured, ""},
    {"seed", kC, kCh, kHonoured, ""},
    {"stop", kC, kCh, kHonoured, ""},
    {"n", kC, kCh, kHonoured, ""},
    {"stream", kC, kCh, kHonoured, ""},
    {"stream_options", kC, kCh, kHonoured, ""},
    {"logprobs", kC, kCh, kHonoured, ""},
    {"top_logprobs", false, kCh, kHonoured, ""},
    {"echo", kC, false, kHonoured, ""},
    {"ignore_eos", kC, kCh, kHonoured, ""},
    {"cache_salt", kC, kCh, kHonoured, ""},
    {"json_schema", kC, kCh, kHonoured, ""},
    {"grammar", kC, kCh, kHonoured, ""},
    {"response_format", kC, kCh, kHonoured, ""},
    {"tool_choice", false, kCh, kHonoured, ""},
    {"tools", false, kCh, kHonoured, ""},
    // Refused by request.cpp (refuse_unsupported, parse_logprobs), each with its neutral value.
    {"echo", false, kCh, kRefused, ""},
    {"best_of", kC, false, kRefused, ""},
    {"suffix", kC, false, kRefused, ""},
    {"functions", false, kCh, kRefused, ""},
    {"function_call", false, kCh, kRefused, ""},
    {"mirostat", kC, kCh, kRefused, ""},
    {"tfs_z", kC, kCh, kRefused, ""},
    {"dry_multiplier", kC, kCh, kRefused, ""},
    {"xtc_probability", kC, kCh, kRefused, ""},
    {"dynatemp_range", kC, kCh, kRefused, ""},
    {"top_n_sigma", kC, kCh, kRefused, ""},
    {"n_probs", kC, kCh, kRefused, ""},
    // Refused here: OpenAI's chat fields for what a text-only model without tools cannot do.
    {"modalities", false, kCh, kRefused, R"(["text"])"},
    {"audio", false, kCh, kRefused, "*"},
    {"prediction", false, kCh, kRefused, "*"},
    {"web_search_options", false, kCh, kRefused, "*"},
    {"reasoning_effort", false, kCh, kRefused, "*"},
    {"verbosity", false, kCh, kRefused, "*"},
    {"moderation", false, kCh, kRefused, "*"},
    // Accepted and ignored: they ask for nothing that changes the answer here.
    {"user", kC, kCh, kIgnored, ""},
    {"parallel_tool_calls", false, kCh, kIgnored, ""},
    {"safety_identifier", false, kCh, kIgnored, ""},
    {"metadata", false, kCh, kIgnored, ""},
    {"store", false, kCh, kIgnored, ""},
    {"service_tier", false, kCh, kIgnored, ""},
    {"prompt_cache_key", false, kCh, kIgnored, ""},
    {"prompt_cache_retention", false, kCh, kIgnored, ""},
    {"prompt_cache_options", false, kCh, kIgnored, ""},
});

constexpr std::array kMessageFields = std::to_array<RequestField>({
    {"role", false, kCh, kHonoured, ""},
    {"content", false, kCh, kHonoured, ""},
    {"name", false, kCh, kIgnored, ""},
    {"refusal", false, kCh, kIgnored, ""},
    // Tool calls in the history (tool_calls.hpp renders them).
    {"tool_calls", false, kCh, kHonoured, ""},
    {"tool_call_id", false, kCh, kHonoured, ""},
    {"function_call", false, kCh, kRefused, "*"},
    {"audio", false, kCh, kRefused, "*"},
});

bool on_endpoint(const RequestField& f, Endpoint endpoint) {
    return endpoint == Endpoint::Chat ? f.chat : f.completions;
}

const char* endpoint_path(Endpoint endpoint) {
    return endpoint == Endpoint::Chat ? "/v1/chat/completions" : "/v1/completions";
}

// The refusals this table does itself (FieldUse::Refused with a neutral value given).
void check_neutral(const RequestField& f, const JsonValue& v, const std::string& param) {
    if (f.use != FieldUse::Refused || f.neutral.empty()) {
        return;
    }
    if (f.neutral != "*" && nlohmann::ordered_json::parse(f.neutral) == to_nlohmann(v)) {
        return;
    }
    throw invalid_request(
        f.neutral == "*" ? fmt::format("{} is not supported by vkf-server", param)
                         : fmt::format("{} is not supported by vkf-server (only {} is accepted)", param, f.neutral),
        param, "unsupported_parameter");
}

// stream_options: include_usage is honoured; include_obfuscation (random padding in each
// chunk, against length side channels over TLS) changes no text and vkf-server sends none.
void check_stream_options(const JsonValue& options) {
    for (const JsonMember& m : options.as_object()) {
        if (!m.value.is_null() && m.key != "include_usage" && m.key != "include_obfuscation") {
            const std::string param = fmt::format("stream_options.{}", m.key);
            throw invalid_request(fmt::format("{} is not a field vkf-server knows (stream_options takes "
                                              "include_usage and include_obfuscation)",
                                              param),
                                  param, "unknown_parameter");
        }
    }
}

}  // namespace

std::span<const RequestField> request_fields() {
    return kRequestFields;
}

std::span<const RequestField> message_fields() {
    return kMessageFields;
}

std::string_view field_use_name(FieldUse use) {
    switch (use) {
        case FieldUse::Honoured:
            return "honoured";
        case FieldUse::Refused:
            return "refused";
        case FieldUse::Ignored:
            return "ignored";
    }
    return "?";
}

void check_request_fields(const JsonValue& doc, Endpoint endpoint) {
    for (const JsonMember& m : doc.as_object()) {
        if (m.value.is_null()) {
            continue;  // OpenAI's clients send null for "not given"
        }
        const RequestField* found = nullptr;
        const RequestField* elsewhere = nullptr;
        for (const RequestField& f : kRequestFields) {
            if (f.name == m.key) {
                (on_endpoint(f, endpoint) ? found : elsewhere) = &f;
            }
        }
        if (found == nullptr) {
            const Endpoint other = endpoint == Endpoint::Chat ? Endpoint::Completions : Endpoint::Chat;
            throw invalid_request(
                elsewhere != nullptr
                    ? fmt::format("{} is a {} field ({}), not one of {}", m.key,
                                  other == Endpoint::Chat ? "chat" : "completions", endpoint_path(other),
                                  endpoint_path(endpoint))
                    : fmt::format("{} is not a field vkf-server knows: it refuses what it would otherwise drop "
                                  "(docs/SERVER.md lists every field)",
                                  m.key),
                m.key, "unknown_parameter");
        }
        check_neutral(*found, m.value, m.key);
        if (m.key == "stream_options" && m.value.is_object()) {
            check_stream_options(m.value);
        }
    }
}

void check_message_fields(const JsonValue& message, const std::string& param) {
    for (const JsonMember& m : message.as_object()) {
        if (m.value.is_null()) {
            continue;
        }
        const std::string key = fmt::format("{}.{}", param, m.key);
        const RequestField* found = nullptr;
        for (const RequestField& f : kMessageFields) {
            found = f.name == m.key ? &f : found;
        }
        if (found == nullptr) {
            throw invalid_request(fmt::format("{} is not a message field vkf-server knows (docs/SERVER.md lists "
                                              "every field)",
                                              key),
                                  key, "unknown_parameter");
        }
        check_neutral(*found, m.value, key);
    }
}

}  // namespace vkf::serve
