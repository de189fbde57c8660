#pragma once
// The fields that constrain a generation's text to a grammar (issue 43), read into GBNF for
// GenerationRequest::grammar: llama-server's `grammar` (GBNF) and `json_schema` (a schema),
// and OpenAI's `response_format` ({"type": "text"}, {"type": "json_object"} for any JSON
// object, {"type": "json_schema", "json_schema": {"name", "schema", "strict", "description"}}).
// At most one of them may constrain; each is checked whole here (the GBNF parsed, the schema
// converted, host/grammar/json_schema.hpp), so a bad one is a 400 naming it, and a schema
// keyword outside the subset a 400 naming the keyword.

#include "host/io/json.hpp"

#include <optional>
#include <string>

namespace vkf::serve {

std::optional<std::string> parse_output_format(const JsonValue& doc);

}  // namespace vkf::serve
