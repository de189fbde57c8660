#include "host/serve/request.hpp"

#include "base/error.hpp"
#include "host/io/json.hpp"
#include "host/serve/api_error.hpp"
#include "host/serve/request_field_table.hpp"
#include "host/serve/request_fields.hpp"
#include "host/serve/request_format.hpp"
#include "host/serve/tool_calls.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>

namespace vkf::serve {
using namespace fields;

namespace {

// Fields no implementation here honours: refused where they would change the answer.
void refuse_unsupported(const JsonValue& doc) {
    for (const char* key : {"functions", "function_call", "suffix", "best_of"}) {
        const JsonValue* v = field(doc, key);
        if (v == nullptr || (v->is_bool() && !v->as_bool())) {
            continue;
        }
        if (std::string_view(key) == "best_of" && v->is_number() && v->as_double() == 1.0) {
            continue;
        }
        throw invalid_request(fmt::format("{} is not supported by vkf-server", key), key, "unsupported_parameter");
    }
    // llama-server's other samplers, which front ends send with their neutral value.
    struct Neutral {
        const char* key;
        double value;
    };
    for (const Neutral n : {Neutral{"mirostat", 0.0}, Neutral{"tfs_z", 1.0}, Neutral{"dry_multiplier", 0.0},
                            Neutral{"xtc_probability", 0.0}, Neutral{"dynatemp_range", 0.0},
                            Neutral{"top_n_sigma", -1.0}, Neutral{"n_probs", 0.0}}) {
        const JsonValue* v = field(doc, n.key);
        if (v != nullptr && (!v->is_number() || v->as_double() != n.value)) {
            throw invalid_request(fmt::format("{} is not supported by vkf-server (only {} is accepted, which turns "
                                              "it off)",
                                              n.key, n.value),
                                  n.key, "unsupported_parameter");
        }
    }
}

void parse_logit_bias(const JsonValue& v, const RequestLimits& limits, GenerationRequest& r) {
    if (!v.is_object()) {
        wrong_type("logit_bias", v, "an object of token ids to biases");
    }
    const auto members = v.as_object();
    if (members.size() > limits.max_logit_bias) {
        throw invalid_request(
            fmt::format("logit_bias holds {} entries; the limit is {}", members.size(), limits.max_logit_bias),
            "logit_bias");
    }
    for (const JsonMember& m : members) {
        const std::string param = fmt::format("logit_bias[\"{}\"]", m.key);
        std::uint32_t id = 0;
        const char* end = m.key.data() + m.key.size();
        const auto [ptr, ec] = std::from_chars(m.key.data(), end, id);
        if (m.key.empty() || ec != std::errc() || ptr != end) {
            throw invalid_request(fmt::format("{}: the key must be a token id (a decimal integer)", param),
                                  "logit_bias");
        }
        r.logit_bias.emplace_back(id, get_number(m.value, param, -100.0, 100.0));
    }
}

// Completions: logprobs N (0 to 5) and echo; chat: logprobs true with top_logprobs N (0 to 20).
void parse_logprobs(const JsonValue& doc, GenerationRequest& r) {
    const JsonValue* logprobs = field(doc, "logprobs");
    const JsonValue* top = field(doc, "top_logprobs");
    const JsonValue* echo = field(doc, "echo");
    if (echo != nullptr && r.endpoint == Endpoint::Chat && !(echo->is_bool() && !echo->as_bool())) {
        throw invalid_request("echo is not supported by vkf-server", "echo", "unsupported_parameter");
    }
    if (r.endpoint == Endpoint::Completions) {
        r.echo = echo != nullptr && get_bool(*echo, "echo");
        if (top != nullptr) {
            throw invalid_request("top_logprobs is a chat field; completions take logprobs N", "top_logprobs");
        }
        if (logprobs != nullptr) {
            r.logprobs = static_cast<std::uint32_t>(get_integer(*logprobs, "logprobs", 0, 5));
        }
        return;
    }
    const bool on = logprobs != nullptr && get_bool(*logprobs, "logprobs");
    if (top != nullptr && !on) {
        throw invalid_request("top_logprobs needs logprobs: true", "top_logprobs");
    }
    if (on) {
        r.logprobs = top == nullptr ? 0 : static_cast<std::uint32_t>(get_integer(*top, "top_logprobs", 0, 20));
    }
}

// The sampler chain's fields besides temperature, top_p, top_k and seed.
void parse_sampler_fields(const JsonValue& doc, const RequestLimits& limits, GenerationRequest& r) {
    if (const JsonValue* v = field(doc, "min_p")) {
        r.min_p = get_number(*v, "min_p", 0.0, 1.0);
    }
    if (const JsonValue* v = field(doc, "typical_p")) {
        r.typical_p = get_number(*v, "typical_p", 0.0, 1.0);
        if (r.typical_p == 0.0) {
            throw invalid_request("typical_p must be above 0 and at most 1, not 0", "typical_p");
        }
    }
    if (const JsonValue* v = field(doc, "repetition_penalty")) {
        r.repetition_penalty = get_number(*v, "repetition_penalty", 0.0, 10.0);
        if (r.repetition_penalty == 0.0) {
            throw invalid_request("repetition_penalty must be above 0 (1 turns it off), not 0", "repetition_penalty");
        }
    }
    if (const JsonValue* v = field(doc, "presence_penalty")) {
        r.presence_penalty = get_number(*v, "presence_penalty", -2.0, 2.0);
    }
    if (const JsonValue* v = field(doc, "frequency_penalty")) {
        r.frequency_penalty = get_number(*v, "frequency_penalty", -2.0, 2.0);
    }
    if (const JsonValue* v = field(doc, "repeat_last_n")) {
        r.repeat_last_n = static_cast<std::uint32_t>(get_integer(*v, "repeat_last_n", 0, 1u << 20));
    }
    if (const JsonValue* v = field(doc, "logit_bias")) {
        parse_logit_bias(*v, limits, r);
    }
}

void parse_common(const JsonValue& doc, const RequestLimits& limits, GenerationRequest& r) {
    refuse_unsupported(doc);
    parse_sampler_fields(doc, limits, r);
    if (const JsonValue* v = field(doc, "model")) {
        r.model = get_string(*v, "model");
    }
    const char* max_key = "max_tokens";
    const JsonValue* max_tokens = field(doc, "max_tokens");
    if (r.endpoint == Endpoint::Chat && max_tokens == nullptr) {
        max_key = "max_completion_tokens";
        max_tokens = field(doc, max_key);
    }
    if (max_tokens != nullptr) {
        r.max_tokens = static_cast<std::uint32_t>(
            get_integer(*max_tokens, max_key, 1, limits.max_tokens, "the server's limit, --max-tokens"));
    }
    if (const JsonValue* v = field(doc, "temperature")) {
        r.temperature = get_number(*v, "temperature", 0.0, 2.0);
    }
    if (const JsonValue* v = field(doc, "top_p")) {
        r.top_p = get_number(*v, "top_p", 0.0, 1.0);
        if (r.top_p == 0.0) {
            throw invalid_request("top_p must be above 0 and at most 1, not 0", "top_p");
        }
    }
    if (const JsonValue* v = field(doc, "top_k")) {
        r.top_k = static_cast<std::uint32_t>(get_integer(*v, "top_k", 0, std::numeric_limits<std::uint32_t>::max()));
    }
    if (const JsonValue* v = field(doc, "seed")) {
        if (!v->is_number()) {
            wrong_type("seed", *v, "an integer");
        }
        const double x = v->as_double();
        if (x != std::floor(x) || std::fabs(x) > 9.2e18) {
            throw invalid_request("seed must be a 64-bit integer", "seed", "invalid_type");
        }
        // OpenAI's seeds may be negative; the sampler's is unsigned, the bits are the same.
        r.seed = x < 0 ? static_cast<std::uint64_t>(v->as_int64()) : v->as_uint64();
    }
    if (const JsonValue* v = field(doc, "stop")) {
        const auto add_stop = [&](const JsonValue& s, const std::string& param) {
            std::string text = get_string(s, param);
            if (text.empty()) {
                throw invalid_request(param + " is empty", param);
            }
            if (text.size() > limits.max_stop_bytes) {
                throw invalid_request(param + " is over " + fmt::to_string(limits.max_stop_bytes) + " bytes", param);
            }
            r.stop.push_back(std::move(text));
        };
        if (v->is_array()) {
            const Span stops = v->as_array();
            if (stops.size() > limits.max_stops) {
                throw invalid_request("stop holds " + fmt::to_string(stops.size()) + " strings; at most " +
                                          fmt::to_string(limits.max_stops) + " are allowed",
                                      "stop");
            }
            for (std::size_t i = 0; i < stops.size(); ++i) {
                add_stop(stops[i], "stop[" + fmt::to_string(i) + "]");
            }
        } else {
            add_stop(*v, "stop");
        }
    }
    if (const JsonValue* v = field(doc, "n")) {
        r.n = static_cast<std::uint32_t>(get_integer(*v, "n", 1, limits.max_n, "the server's limit, --max-n"));
    }
    if (const JsonValue* v = field(doc, "stream")) {
        r.stream = get_bool(*v, "stream");
    }
    if (const JsonValue* v = field(doc, "stream_options")) {
        if (!v->is_object()) {
            wrong_type("stream_options", *v, "an object");
        }
        if (!r.stream) {
            throw invalid_request("stream_options is only allowed with stream: true", "stream_options");
        }
        if (const JsonValue* u = field(*v, "include_usage")) {
            r.include_usage = get_bool(*u, "stream_options.include_usage");
        }
    }
    if (const JsonValue* v = field(doc, "ignore_eos")) {
        r.ignore_eos = get_bool(*v, "ignore_eos");
    }
    if (const JsonValue* v = field(doc, "cache_salt")) {
        r.cache_salt = get_string(*v, "cache_salt");
        if (r.cache_salt->empty()) {
            throw invalid_request("cache_salt is empty: give a non-empty string, or leave it out", "cache_salt");
        }
    }
    parse_logprobs(doc, r);
    r.grammar = parse_output_format(doc);
    r.tools = parse_tools(doc, r.endpoint);
    if (r.tools && !r.tools->grammar.empty()) {
        if (r.grammar) {
            throw invalid_request(
                "tools and grammar, json_schema or response_format both constrain the output; "
                "give one (or tool_choice \"none\")",
                "tools");
        }
        r.grammar = r.tools->grammar;
    }
}

std::string message_content(const JsonValue& v, const std::string& param) {
    if (v.is_string()) {
        return v.as_string();
    }
    if (!v.is_array()) {
        wrong_type(param, v, "a string or an array of text parts");
    }
    // Content parts: only text parts can reach a text-only model.
    std::string text;
    const Span parts = v.as_array();
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const std::string part_param = param + "[" + fmt::to_string(i) + "]";
        if (!parts[i].is_object()) {
            wrong_type(part_param, parts[i], "an object");
        }
        const JsonValue* type = field(parts[i], "type");
        if (type == nullptr || get_string(*type, part_param + ".type") != "text") {
            throw invalid_request(part_param + ".type must be \"text\": the model reads text only",
                                  part_param + ".type");
        }
        const JsonValue* part_text = field(parts[i], "text");
        if (part_text == nullptr) {
            throw invalid_request(part_param + ".text is missing", part_param + ".text");
        }
        text += get_string(*part_text, part_param + ".text");
    }
    return text;
}

}  // namespace

GenerationRequest parse_completion_request(std::string_view body, const RequestLimits& limits) {
    const JsonValue doc = parse_body(body, limits);
    GenerationRequest r;
    r.endpoint = Endpoint::Completions;
    const JsonValue* prompt = field(doc, "prompt");
    if (prompt == nullptr) {
        throw invalid_request("prompt is missing", "prompt", "missing_required_parameter");
    }
    check_request_fields(doc, Endpoint::Completions);
    if (prompt->is_string()) {
        r.prompts.push_back({.text = prompt->as_string()});
    } else if (is_id_array(*prompt)) {
        r.prompts.push_back({.ids = get_ids(*prompt, "prompt", limits.max_prompt_ids)});
    } else if (prompt->is_array()) {
        // Several prompts (LangChain's generate([a, b])): strings, or arrays of token ids.
        const Span items = prompt->as_array();
        if (items.empty()) {
            throw invalid_request("prompt is an empty array", "prompt");
        }
        if (items.size() > limits.max_prompts) {
            throw invalid_request(
                fmt::format("prompt holds {} prompts; the limit is {}", items.size(), limits.max_prompts), "prompt");
        }
        for (std::size_t i = 0; i < items.size(); ++i) {
            const std::string param = fmt::format("prompt[{}]", i);
            if (items[i].is_string()) {
                r.prompts.push_back({.text = items[i].as_string()});
            } else if (items[i].is_array()) {
                r.prompts.push_back({.ids = get_ids(items[i], param, limits.max_prompt_ids)});
            } else {
                wrong_type(param, items[i], "a string or an array of token ids");
            }
        }
    } else {
        wrong_type("prompt", *prompt, "a string, an array of token ids, or an array of those");
    }
    parse_common(doc, limits, r);
    if (r.stream && r.prompts.size() > 1) {
        throw invalid_request("stream with several prompts is not supported by vkf-server: send one request each",
                              "prompt", "unsupported_parameter");
    }
    return r;
}

GenerationRequest parse_chat_request(std::string_view body, const RequestLimits& limits) {
    const JsonValue doc = parse_body(body, limits);
    GenerationRequest r;
    r.endpoint = Endpoint::Chat;
    const JsonValue* messages = field(doc, "messages");
    if (messages == nullptr) {
        throw invalid_request("messages is missing", "messages", "missing_required_parameter");
    }
    check_request_fields(doc, Endpoint::Chat);
    if (!messages->is_array()) {
        wrong_type("messages", *messages, "an array");
    }
    const Span items = messages->as_array();
    if (items.empty()) {
        throw invalid_request("messages is empty: give at least one message", "messages");
    }
    if (items.size() > limits.max_messages) {
        throw invalid_request("messages holds " + fmt::to_string(items.size()) + " messages; the limit is " +
                                  fmt::to_string(limits.max_messages),
                              "messages");
    }
    for (std::size_t i = 0; i < items.size(); ++i) {
        const std::string param = "messages[" + fmt::to_string(i) + "]";
        if (!items[i].is_object()) {
            wrong_type(param, items[i], "an object");
        }
        check_message_fields(items[i], param);
        if (std::optional<ChatMessageIn> m = tool_history_message(items[i], param)) {
            r.messages.push_back(std::move(*m));
            continue;
        }
        const JsonValue* role = field(items[i], "role");
        if (role == nullptr) {
            throw invalid_request(param + ".role is missing", param + ".role", "missing_required_parameter");
        }
        ChatMessageIn m{.role = get_string(*role, param + ".role")};
        if (const JsonValue* content = field(items[i], "content")) {
            m.content = message_content(*content, param + ".content");
        } else if (m.role != "assistant") {
            throw invalid_request(param + ".content is missing", param + ".content", "missing_required_parameter");
        }
        r.messages.push_back(std::move(m));
    }
    parse_common(doc, limits, r);
    if (r.tools) {
        add_tools_prompt(*r.tools, r.messages);
    }
    return r;
}

}  // namespace vkf::serve
