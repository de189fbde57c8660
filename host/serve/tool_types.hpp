#pragma once
// What a chat request's tools are and what a tool call answers (host/serve/tool_calls.hpp reads
// and makes them), apart so that request.hpp and responses.hpp can hold them.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vkf::serve {

struct ToolFunction {
    std::string name;
    std::string description;
    nlohmann::ordered_json parameters;  // the schema, as given ({} when absent)
};

struct ToolRequest {
    enum class Choice { None, Auto, Required, Named };
    std::vector<ToolFunction> functions;
    Choice choice = Choice::Auto;
    std::string named;    // Choice::Named: the function
    std::string grammar;  // GBNF of the answer (empty with Choice::None)
};

struct ToolCall {
    std::string id;  // "call_..."
    std::string name;
    std::string arguments;  // JSON text, as OpenAI sends it
};

}  // namespace vkf::serve
