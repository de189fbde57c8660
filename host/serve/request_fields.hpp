#pragma once
// The typed reads every request parser shares (host/serve/request.cpp,
// embedding_request.cpp): each throws an ApiError (400) naming the field by its path
// ("messages[2].role") and saying what it must be.

#include "host/io/json.hpp"
#include "host/serve/request.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::serve::fields {

using Span = std::span<const JsonValue>;

std::string kind_name(const JsonValue& v);
[[noreturn]] void wrong_type(const std::string& param, const JsonValue& v, std::string_view expected);
// The body as a JSON object (400 for malformed JSON or another kind).
JsonValue parse_body(std::string_view body, const RequestLimits& limits);
// Absent and null are the same: OpenAI's clients send null for "not given".
const JsonValue* field(const JsonValue& doc, std::string_view key);
std::string get_string(const JsonValue& v, const std::string& param);
bool get_bool(const JsonValue& v, const std::string& param);
double get_number(const JsonValue& v, const std::string& param, double min, double max);
std::uint64_t get_integer(const JsonValue& v, const std::string& param, std::uint64_t min, std::uint64_t max,
                          std::string_view limit_name = {});
std::vector<std::uint32_t> get_ids(const JsonValue& v, const std::string& param, std::uint32_t max_ids);
bool is_id_array(const JsonValue& v);

}  // namespace vkf::serve::fields
