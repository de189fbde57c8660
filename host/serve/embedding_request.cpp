#include "host/serve/request.hpp"

#include "host/serve/api_error.hpp"
#include "host/serve/request_fields.hpp"

#include <fmt/format.h>

namespace vkf::serve {

using namespace fields;

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
