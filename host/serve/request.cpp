#include "host/serve/request.hpp"

#include "base/error.hpp"
#include "host/io/json.hpp"
#include "host/serve/api_error.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace vkf::serve {
namespace {

using Span = std::span<const JsonValue>;

std::string kind_name(const JsonValue& v) {
    return std::string(json_kind_name(v.kind()));
}

[[noreturn]] void wrong_type(const std::string& param, const JsonValue& v, std::string_view expected) {
    throw invalid_request(param + " must be " + std::string(expected) + ", not " + kind_name(v), param, "invalid_type");
}

JsonValue parse_body(std::string_view body, const RequestLimits& limits) {
    JsonValue doc;
    try {
        doc = parse_json(body, "request body", limits.max_json_depth);
    } catch (const Error& e) {
        throw malformed_json(e.what());
    }
    if (!doc.is_object()) {
        throw invalid_request("the request body must be a JSON object, not " + kind_name(doc), std::nullopt,
                              "invalid_type");
    }
    return doc;
}

// Absent and null are the same: OpenAI's clients send null for "not given".
const JsonValue* field(const JsonValue& doc, std::string_view key) {
    const JsonValue* v = doc.find(key);
    return v == nullptr || v->is_null() ? nullptr : v;
}

std::string get_string(const JsonValue& v, const std::string& param) {
    if (!v.is_string()) {
        wrong_type(param, v, "a string");
    }
    return v.as_string();
}

bool get_bool(const JsonValue& v, const std::string& param) {
    if (!v.is_bool()) {
        wrong_type(param, v, "true or false");
    }
    return v.as_bool();
}

double get_number(const JsonValue& v, const std::string& param, double min, double max) {
    if (!v.is_number()) {
        wrong_type(param, v, "a number");
    }
    const double x = v.as_double();
    if (!(x >= min && x <= max)) {
        throw invalid_request(param + " must be between " + fmt::format("{:f}", min) + " and " +
                                  fmt::format("{:f}", max) + ", not " + fmt::format("{:f}", x),
                              param);
    }
    return x;
}

std::uint64_t get_integer(const JsonValue& v, const std::string& param, std::uint64_t min, std::uint64_t max,
                          std::string_view limit_name = {}) {
    if (!v.is_number()) {
        wrong_type(param, v, "an integer");
    }
    const double x = v.as_double();
    if (x != std::floor(x)) {
        throw invalid_request(param + " must be an integer, not " + fmt::format("{:f}", x), param, "invalid_type");
    }
    if (x < static_cast<double>(min) || x > static_cast<double>(max)) {
        std::string message = param + " must be between " + fmt::to_string(min) + " and " + fmt::to_string(max);
        if (!limit_name.empty()) {
            message += " (" + std::string(limit_name) + ")";
        }
        throw invalid_request(
            message + ", not " +
                (std::fabs(x) < 1e18 ? fmt::to_string(static_cast<long long>(x)) : fmt::format("{:f}", x)),
            param);
    }
    return v.as_uint64();
}

std::vector<std::uint32_t> get_ids(const JsonValue& v, const std::string& param, std::uint32_t max_ids) {
    const Span items = v.as_array();
    if (items.empty()) {
        throw invalid_request(param + " holds no token ids", param);
    }
    if (items.size() > max_ids) {
        throw invalid_request(
            param + " holds " + fmt::to_string(items.size()) + " token ids; the limit is " + fmt::to_string(max_ids),
            param, "context_length_exceeded");
    }
    std::vector<std::uint32_t> ids;
    ids.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
        ids.push_back(static_cast<std::uint32_t>(get_integer(items[i], param + "[" + fmt::to_string(i) + "]", 0,
                                                             std::numeric_limits<std::uint32_t>::max())));
    }
    return ids;
}

bool is_id_array(const JsonValue& v) {
    return v.is_array() && v.size() > 0 && v.as_array()[0].is_number();
}

// Fields no implementation here honours: refused where they would change the answer.
void refuse_unsupported(const JsonValue& doc) {
    for (const char* key : {"logprobs", "top_logprobs", "tools", "functions", "tool_choice", "function_call",
                            "logit_bias", "suffix", "best_of", "echo", "response_format"}) {
        const JsonValue* v = field(doc, key);
        if (v == nullptr || (v->is_bool() && !v->as_bool())) {
            continue;
        }
        if (std::string_view(key) == "response_format" && v->is_object()) {
            const JsonValue* type = v->find("type");
            if (type != nullptr && type->is_string() && type->as_string() == "text") {
                continue;
            }
        }
        if (std::string_view(key) == "best_of" && v->is_number() && v->as_double() == 1.0) {
            continue;
        }
        throw invalid_request(std::string(key) + " is not supported by vkf-server", key, "unsupported_parameter");
    }
    for (const char* key : {"presence_penalty", "frequency_penalty"}) {
        const JsonValue* v = field(doc, key);
        if (v != nullptr && get_number(*v, key, -2.0, 2.0) != 0.0) {
            throw invalid_request(std::string(key) + " other than 0 is not supported by vkf-server", key,
                                  "unsupported_parameter");
        }
    }
}

void parse_common(const JsonValue& doc, const RequestLimits& limits, GenerationRequest& r) {
    refuse_unsupported(doc);
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
    if (prompt->is_string()) {
        r.prompt_text = prompt->as_string();
    } else if (is_id_array(*prompt)) {
        r.prompt_ids = get_ids(*prompt, "prompt", limits.max_prompt_ids);
    } else if (prompt->is_array() && prompt->size() == 1) {
        const JsonValue& only = prompt->as_array()[0];
        if (only.is_string()) {
            r.prompt_text = only.as_string();
        } else if (only.is_array()) {
            r.prompt_ids = get_ids(only, "prompt[0]", limits.max_prompt_ids);
        } else {
            wrong_type("prompt[0]", only, "a string or an array of token ids");
        }
    } else if (prompt->is_array()) {
        throw invalid_request(prompt->size() == 0 ? "prompt is an empty array"
                                                  : "prompt holds " + fmt::to_string(prompt->size()) +
                                                        " prompts; vkf-server takes one prompt per request",
                              "prompt");
    } else {
        wrong_type("prompt", *prompt, "a string, an array of token ids or an array of one of them");
    }
    parse_common(doc, limits, r);
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
    return r;
}

EmbeddingRequest parse_embedding_request(std::string_view body, const RequestLimits& limits) {
    const JsonValue doc = parse_body(body, limits);
    EmbeddingRequest r;
    if (const JsonValue* v = field(doc, "model")) {
        r.model = get_string(*v, "model");
    }
    const JsonValue* input = field(doc, "input");
    if (input == nullptr) {
        throw invalid_request("input is missing", "input", "missing_required_parameter");
    }
    if (input->is_string()) {
        r.texts.push_back(input->as_string());
    } else if (is_id_array(*input)) {
        r.ids.push_back(get_ids(*input, "input", limits.max_prompt_ids));
    } else if (input->is_array()) {
        const Span items = input->as_array();
        if (items.empty()) {
            throw invalid_request("input is an empty array", "input");
        }
        if (items.size() > limits.max_inputs) {
            throw invalid_request("input holds " + fmt::to_string(items.size()) + " inputs; the limit is " +
                                      fmt::to_string(limits.max_inputs),
                                  "input");
        }
        const bool text = items[0].is_string();
        for (std::size_t i = 0; i < items.size(); ++i) {
            const std::string param = "input[" + fmt::to_string(i) + "]";
            if (text) {
                r.texts.push_back(get_string(items[i], param));
            } else if (items[i].is_array()) {
                r.ids.push_back(get_ids(items[i], param, limits.max_prompt_ids));
            } else {
                wrong_type(param, items[i], "an array of token ids, like input[0]");
            }
        }
    } else {
        wrong_type("input", *input, "a string, an array of strings or token ids");
    }
    for (std::size_t i = 0; i < r.texts.size(); ++i) {
        if (r.texts[i].empty()) {
            throw invalid_request("input[" + fmt::to_string(i) + "] is empty", "input");
        }
    }
    if (const JsonValue* v = field(doc, "encoding_format")) {
        const std::string format = get_string(*v, "encoding_format");
        if (format != "float" && format != "base64") {
            throw invalid_request("encoding_format must be \"float\" or \"base64\", not \"" + format + "\"",
                                  "encoding_format");
        }
        r.base64 = format == "base64";
    }
    if (field(doc, "dimensions") != nullptr) {
        throw invalid_request("dimensions is not supported: the embedding has the model's hidden size", "dimensions",
                              "unsupported_parameter");
    }
    return r;
}

std::string base64_encode(std::string_view bytes) {
    static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const std::uint32_t v = (std::uint32_t{static_cast<std::uint8_t>(bytes[i])} << 16) |
                                (std::uint32_t{static_cast<std::uint8_t>(bytes[i + 1])} << 8) |
                                static_cast<std::uint8_t>(bytes[i + 2]);
        for (int shift = 18; shift >= 0; shift -= 6) {
            out += kAlphabet[(v >> shift) & 63];
        }
    }
    const std::size_t rest = bytes.size() - i;
    if (rest > 0) {
        std::uint32_t v = std::uint32_t{static_cast<std::uint8_t>(bytes[i])} << 16;
        if (rest == 2) {
            v |= std::uint32_t{static_cast<std::uint8_t>(bytes[i + 1])} << 8;
        }
        out += kAlphabet[(v >> 18) & 63];
        out += kAlphabet[(v >> 12) & 63];
        out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

}  // namespace vkf::serve
