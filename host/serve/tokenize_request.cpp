#include "host/serve/tokenize_request.hpp"

#include "host/serve/api_error.hpp"
#include "host/serve/request_fields.hpp"

#include <fmt/format.h>

#include <initializer_list>
#include <limits>

namespace vkf::serve {

using namespace fields;

namespace {

// A key outside `known` is refused, as the generation routes refuse theirs.
void refuse_unknown(const JsonValue& doc, std::string_view route, std::initializer_list<std::string_view> known) {
    for (const JsonMember& m : doc.as_object()) {
        bool listed = false;
        for (const std::string_view k : known) {
            listed = listed || k == m.key;
        }
        if (!listed && !m.value.is_null()) {
            throw invalid_request(
                fmt::format("{} is not a field of {} (it takes {})", m.key, route, fmt::join(known, ", ")), m.key,
                "unknown_parameter");
        }
    }
}

}  // namespace

TokenizeRequest parse_tokenize_request(std::string_view body, const RequestLimits& limits) {
    const JsonValue doc = parse_body(body, limits);
    refuse_unknown(doc, "/tokenize", {"content", "add_special", "parse_special", "with_pieces", "model"});
    TokenizeRequest r;
    const JsonValue* content = field(doc, "content");
    if (content == nullptr) {
        throw invalid_request("content is missing: give the text to tokenize", "content", "missing_required_parameter");
    }
    r.content = get_string(*content, "content");
    if (const JsonValue* v = field(doc, "add_special")) {
        r.add_special = get_bool(*v, "add_special");
    }
    if (const JsonValue* v = field(doc, "with_pieces")) {
        r.with_pieces = get_bool(*v, "with_pieces");
    }
    // The tokenizer always splits out its added tokens' text, as llama-server's default does.
    if (const JsonValue* v = field(doc, "parse_special"); v != nullptr && !get_bool(*v, "parse_special")) {
        throw invalid_request(
            "parse_special false is not supported by vkf-server: special tokens' text is always "
            "read as those tokens",
            "parse_special", "unsupported_parameter");
    }
    if (const JsonValue* v = field(doc, "model")) {
        get_string(*v, "model");
    }
    return r;
}

DetokenizeRequest parse_detokenize_request(std::string_view body, const RequestLimits& limits) {
    const JsonValue doc = parse_body(body, limits);
    refuse_unknown(doc, "/detokenize", {"tokens", "model"});
    const JsonValue* tokens = field(doc, "tokens");
    if (tokens == nullptr) {
        throw invalid_request("tokens is missing: give the token ids to detokenize", "tokens",
                              "missing_required_parameter");
    }
    if (!tokens->is_array()) {
        wrong_type("tokens", *tokens, "an array of token ids");
    }
    if (const JsonValue* v = field(doc, "model")) {
        get_string(*v, "model");
    }
    DetokenizeRequest r;
    if (tokens->size() > 0) {
        r.ids = get_ids(*tokens, "tokens", limits.max_prompt_ids);
    }
    return r;
}

}  // namespace vkf::serve
