// JsonValue: its kind, the typed accessors and lookups, and the messages that name the
// offending value. Parsing is json_parse.cpp, key paths json_path.cpp, writing json_write.cpp.
#include "host/io/json.hpp"

#include "base/error.hpp"
#include "host/io/json_internal.hpp"

#include <fmt/format.h>

#include <charconv>
#include <limits>
#include <string>
#include <variant>

namespace vkf {
namespace {

std::string format_double(double value) {
    char buffer[32];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, result.ptr);
}

std::string describe(const JsonValue& value) {
    switch (value.kind()) {
        case JsonKind::Number:
            return "number " + format_double(value.as_double());
        case JsonKind::Bool:
            return value.as_bool() ? "true" : "false";
        default:
            return std::string(json_kind_name(value.kind()));
    }
}

}  // namespace

std::string_view json_kind_name(JsonKind kind) {
    switch (kind) {
        case JsonKind::Null:
            return "null";
        case JsonKind::Bool:
            return "boolean";
        case JsonKind::Number:
            return "number";
        case JsonKind::String:
            return "string";
        case JsonKind::Array:
            return "array";
        case JsonKind::Object:
            return "object";
    }
    return "unknown";
}

JsonValue::JsonValue() = default;
JsonValue::JsonValue(const JsonValue&) = default;
JsonValue::JsonValue(JsonValue&&) noexcept = default;
JsonValue& JsonValue::operator=(const JsonValue&) = default;
JsonValue& JsonValue::operator=(JsonValue&&) noexcept = default;
JsonValue::~JsonValue() = default;

JsonKind JsonValue::kind() const {
    switch (data_.index()) {
        case 1:
            return JsonKind::Bool;
        case 2:
            return JsonKind::Number;
        case 3:
            return JsonKind::String;
        case 4:
            return JsonKind::Array;
        case 5:
            return JsonKind::Object;
        default:
            return JsonKind::Null;
    }
}

std::string_view JsonValue::source() const {
    return document_ ? std::string_view(document_->source) : std::string_view();
}

std::string JsonValue::location() const {
    const std::string where = path();
    if (source().empty()) {
        return where.empty() ? std::string("JSON value") : where;
    }
    return where.empty() ? std::string(source()) : std::string(source()) + ": " + where;
}

void JsonValue::fail(std::string_view problem) const {
    throw Error(location() + ": " + std::string(problem));
}

void JsonValue::fail_expected(std::string_view expected) const {
    fail("expected " + std::string(expected) + ", got " + describe(*this));
}

void JsonValue::fail_range(std::int64_t min, std::uint64_t max) const {
    fail("expected an integer in [" + fmt::to_string(min) + ", " + fmt::to_string(max) + "], got " + describe(*this));
}

void JsonValue::require(JsonKind kind, std::string_view expected) const {
    if (this->kind() != kind) {
        fail_expected(expected);
    }
}

bool JsonValue::as_bool() const {
    require(JsonKind::Bool, "a boolean");
    return std::get<bool>(data_);
}

double JsonValue::as_double() const {
    require(JsonKind::Number, "a number");
    return std::get<Number>(data_).value;
}

std::int64_t JsonValue::as_int64() const {
    require(JsonKind::Number, "an integer");
    const Number& number = std::get<Number>(data_);
    if (number.has_int64) {
        return number.int64;
    }
    if (number.has_uint64) {
        fail_range(std::numeric_limits<std::int64_t>::min(),
                   static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
    }
    fail_expected("an integer");
}

std::uint64_t JsonValue::as_uint64() const {
    require(JsonKind::Number, "an integer");
    const Number& number = std::get<Number>(data_);
    if (number.has_uint64) {
        return number.uint64;
    }
    fail_expected("a non-negative integer");
}

const std::string& JsonValue::as_string() const {
    require(JsonKind::String, "a string");
    return std::get<std::string>(data_);
}

std::span<const JsonValue> JsonValue::as_array() const {
    require(JsonKind::Array, "an array");
    return std::get<Array>(data_);
}

std::span<const JsonMember> JsonValue::as_object() const {
    require(JsonKind::Object, "an object");
    return std::get<Object>(data_);
}

const JsonValue* JsonValue::find(std::string_view key) const {
    for (const JsonMember& member : as_object()) {
        if (member.key == key) {
            return &member.value;
        }
    }
    return nullptr;
}

const JsonValue& JsonValue::at(std::string_view key) const {
    const JsonValue* value = find(key);
    if (value == nullptr) {
        fail("missing key '" + std::string(key) + "'");
    }
    return *value;
}

const JsonValue& JsonValue::at(std::size_t index) const {
    const std::span<const JsonValue> elements = as_array();
    if (index >= elements.size()) {
        fail("index " + fmt::to_string(index) + " is out of range for an array of " + fmt::to_string(elements.size()) +
             " elements");
    }
    return elements[index];
}

std::size_t JsonValue::size() const {
    if (is_array()) {
        return std::get<Array>(data_).size();
    }
    if (is_object()) {
        return std::get<Object>(data_).size();
    }
    fail_expected("an array or an object");
}

}  // namespace vkf
