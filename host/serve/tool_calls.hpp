#pragma once
// OpenAI's tool calls for vkf-server's chat (issue 43): `tools` (functions with a JSON-schema
// `parameters`) and `tool_choice` read from a request, the tool list put into the prompt as a
// system message, the answer constrained by a grammar to one call {"name": ..., "arguments":
// {...}} whose arguments validate against the function's parameters (host/grammar/
// json_schema.hpp), and that text turned back into the response's `tool_calls`. The `tool`
// role's messages and the assistant's earlier `tool_calls` in the history are rendered as
// text the model's chat format takes (every format has user and assistant turns).

#include "host/io/json.hpp"
#include "host/serve/request.hpp"
#include "host/serve/tool_types.hpp"

#include <optional>
#include <string>
#include <vector>

namespace vkf::serve {

// `tools`, `tool_choice`, `parallel_tool_calls` of a chat request; nullopt without tools (and
// tool_choice "none" or absent). A 400 (ApiError) naming the field for a bad one, a completions
// request with tools, or a parameters schema outside the subset.
std::optional<ToolRequest> parse_tools(const JsonValue& doc, Endpoint endpoint);

// A history message the chat format cannot take as it is, as one it can: role "tool" (a
// result) as a user turn naming its call, an assistant message with `tool_calls` as the calls'
// text. nullopt for any other message.
std::optional<ChatMessageIn> tool_history_message(const JsonValue& message, const std::string& param);

// The system text that lists the tools and says how to call one.
std::string tools_prompt(const ToolRequest& tools);
// Puts tools_prompt() into the conversation: after the system message's text, or as a new
// first system message.
void add_tools_prompt(const ToolRequest& tools, std::vector<ChatMessageIn>& messages);

// The call an answer holds (the grammar's JSON object naming one of the functions), or
// nullopt for plain text (tool_choice auto).
std::optional<ToolCall> parse_tool_call(const std::string& text, const ToolRequest& tools);

}  // namespace vkf::serve
