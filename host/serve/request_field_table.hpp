#pragma once
// Every field a completions or chat request body may hold, and what vkf-server does with it:
// honoured (read by request.cpp), refused (a 400 naming it, unless it holds the value that
// turns it off) or accepted and ignored (it changes nothing here: user, metadata...). A key
// the table does not list for the endpoint is refused with a 400 naming it, so no field a
// client sends is ever dropped silently. docs/SERVER.md's "Request fields" table is this
// one; tests/serve/test_request_field_table.cpp holds the two and the parser to each other.

#include "host/io/json.hpp"
#include "host/serve/request.hpp"

#include <span>
#include <string>
#include <string_view>

namespace vkf::serve {

enum class FieldUse { Honoured, Refused, Ignored };

struct RequestField {
    std::string_view name;
    bool completions;
    bool chat;
    FieldUse use;
    // Refused fields checked here (rather than by request.cpp's own refusals): the JSON of
    // the one value accepted because it turns the field off (compared as parsed JSON), or
    // "*" where any value is refused. Empty: request.cpp refuses it.
    std::string_view neutral;
};

std::span<const RequestField> request_fields();
// Each chat message's fields (messages[i].name...), in the same terms.
std::span<const RequestField> message_fields();

std::string_view field_use_name(FieldUse use);  // "honoured", "refused", "ignored"

// Throws an ApiError (400, param the key) for a non-null key of `doc` the table does not list
// for `endpoint`, or a refused field checked here that holds another value than its neutral one.
void check_request_fields(const JsonValue& doc, Endpoint endpoint);
// The same for one chat message; `param` names it ("messages[2]").
void check_message_fields(const JsonValue& message, const std::string& param);

}  // namespace vkf::serve
