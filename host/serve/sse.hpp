#pragma once
// Server-sent events as OpenAI streams them: one `data: <json>` event per chunk, a blank
// line after each, and `data: [DONE]` at the end. JSON never holds a raw newline (strings
// escape it), so one event is always one `data:` line.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace vkf::serve {

// "data: {...}\n\n". Text that is not valid UTF-8 is replaced (U+FFFD), never thrown on:
// a half-written stream cannot be turned into an error response any more.
std::string sse_event(const nlohmann::ordered_json& data);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";
// A comment line: readers ignore it; writing it finds out whether the client is still there.
inline constexpr std::string_view kSseKeepAlive = ": keep-alive\n\n";

}  // namespace vkf::serve
