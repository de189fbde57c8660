#include "host/serve/request_fields.hpp"

#include "base/error.hpp"
#include "host/serve/api_error.hpp"

#include <fmt/format.h>
#include <cmath>
#include <limits>

namespace vkf::serve::fields {

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
                          std::string_view limit_name) {
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

}  // namespace vkf::serve::fields
