#include "host/spec/config_keys.hpp"

#include <fmt/format.h>

#include <cmath>

namespace vkf::config_keys {

const JsonValue* optional_key(const JsonValue& object, std::string_view key) {
    const JsonValue* value = object.find(key);
    return value == nullptr || value->is_null() ? nullptr : value;
}

const JsonValue& required_key(const JsonValue& root, std::initializer_list<std::string_view> keys) {
    for (std::string_view key : keys) {
        if (const JsonValue* value = optional_key(root, key)) {
            return *value;
        }
    }
    std::string names;
    for (std::string_view key : keys) {
        names += (names.empty() ? "'" : "' or '") + std::string(key);
    }
    root.fail("missing key " + names + "'");
}

std::uint32_t positive_dimension(const JsonValue& value) {
    const auto dimension = value.as_integer<std::uint32_t>();
    if (dimension == 0) {
        value.fail("must be positive");
    }
    return dimension;
}

double positive_number(const JsonValue& value) {
    const double number = value.as_double();
    if (!(number > 0.0) || !std::isfinite(number)) {
        value.fail("must be a positive number");
    }
    return number;
}

bool bool_or(const JsonValue& object, std::string_view key, bool fallback) {
    const JsonValue* value = optional_key(object, key);
    return value == nullptr ? fallback : value->as_bool();
}

std::string string_or(const JsonValue& object, std::string_view key, std::string_view fallback) {
    const JsonValue* value = optional_key(object, key);
    return value == nullptr ? std::string(fallback) : value->as_string();
}

void refuse_if(bool condition, const JsonValue& value, std::string_view why) {
    if (condition) {
        value.fail(std::string(why));
    }
}

void refuse_true(const JsonValue& object, std::string_view key, std::string_view why) {
    if (const JsonValue* value = optional_key(object, key)) {
        refuse_if(value->as_bool(), *value, why);
    }
}

void require_string(const JsonValue& object, std::string_view key, std::string_view wanted, std::string_view why) {
    if (const JsonValue* value = optional_key(object, key)) {
        refuse_if(value->as_string() != wanted, *value,
                  "'" + value->as_string() + "' is not supported (" + std::string(why) + ")");
    }
}

void require_string_or_absent(const JsonValue& object, std::string_view key, std::string_view wanted,
                              std::string_view absent, std::string_view why) {
    if (optional_key(object, key) == nullptr && absent != wanted) {
        object.fail("missing key '" + std::string(key) + "' means '" + std::string(absent) +
                    "', which is not supported (" + std::string(why) + ")");
    }
    require_string(object, key, wanted, why);
}

void require_divisible(const JsonValue& root, std::uint32_t hidden, std::uint32_t n_head, std::string_view hidden_key,
                       std::string_view head_key) {
    if (hidden % n_head != 0) {
        root.fail(std::string(hidden_key) + " " + fmt::to_string(hidden) + " is not a multiple of " +
                  std::string(head_key) + " " + fmt::to_string(n_head));
    }
}

}  // namespace vkf::config_keys
