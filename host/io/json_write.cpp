// Writing: JsonValue to nlohmann's document, and documents to text.
#include "host/io/json.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <variant>

namespace vkf {

nlohmann::ordered_json to_nlohmann(const JsonValue& value) {
    switch (value.kind()) {
        case JsonKind::Null:
            return nullptr;
        case JsonKind::Bool:
            return value.as_bool();
        case JsonKind::Number: {
            const JsonValue::Number& n = std::get<JsonValue::Number>(value.data_);
            if (n.has_int64) {
                return n.int64;
            }
            if (n.has_uint64) {
                return n.uint64;
            }
            return n.value;
        }
        case JsonKind::String:
            return value.as_string();
        case JsonKind::Array: {
            nlohmann::ordered_json array = nlohmann::ordered_json::array();
            for (const JsonValue& element : value.as_array()) {
                array.push_back(to_nlohmann(element));
            }
            return array;
        }
        case JsonKind::Object: {
            nlohmann::ordered_json object = nlohmann::ordered_json::object();
            for (const JsonMember& member : value.as_object()) {
                object[member.key] = to_nlohmann(member.value);
            }
            return object;
        }
    }
    return nullptr;
}

std::string json_text(const nlohmann::ordered_json& document, JsonStyle style) {
    return document.dump(style == JsonStyle::Pretty ? 2 : -1, ' ', false,
                         nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace vkf
