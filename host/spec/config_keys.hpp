#pragma once
// Reading Hugging Face config.json keys for the family parsers (host/spec/families/):
// aliases, null as absent, positive numbers, and refusing a setting by naming its key.
// Every failure throws vkf::Error through JsonValue::fail, which names the file and the
// key path.

#include "host/io/json.hpp"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace vkf::config_keys {

// A key that may be absent; JSON null counts as absent, as it does for Hugging Face's
// optional settings ("clip_qkv": null, "n_inner": null).
const JsonValue* optional_key(const JsonValue& object, std::string_view key);
// The first present key among `keys` (configs have aliases), or a "missing key" error.
const JsonValue& required_key(const JsonValue& root, std::initializer_list<std::string_view> keys);

std::uint32_t positive_dimension(const JsonValue& value);
double positive_number(const JsonValue& value);
bool bool_or(const JsonValue& object, std::string_view key, bool fallback);
// The string value of an optional key, or `fallback` when absent.
std::string string_or(const JsonValue& object, std::string_view key, std::string_view fallback);

// Refuses a setting whose value vkformer cannot honour, naming the key.
void refuse_if(bool condition, const JsonValue& value, std::string_view why);
// Refuses an optional boolean key that is present and true.
void refuse_true(const JsonValue& object, std::string_view key, std::string_view why);
// Refuses an optional string key whose value is not `wanted`.
void require_string(const JsonValue& object, std::string_view key, std::string_view wanted, std::string_view why);
// The same, where a missing key means `absent` (the modeling code's default), refused too
// when it is not `wanted`: "missing key 'K' means 'ABSENT', which is not supported (WHY)".
void require_string_or_absent(const JsonValue& object, std::string_view key, std::string_view wanted,
                              std::string_view absent, std::string_view why);

// hidden % n_head == 0, naming both keys.
void require_divisible(const JsonValue& root, std::uint32_t hidden, std::uint32_t n_head, std::string_view hidden_key,
                       std::string_view head_key);

}  // namespace vkf::config_keys
