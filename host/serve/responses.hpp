#pragma once
// The bodies vkf-server answers with, in OpenAI's shapes: a whole completion or chat
// completion, the chunks of a streamed one, and the usage counts.

#include "host/serve/request.hpp"
#include "host/serve/tool_types.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace vkf::serve {

struct Usage {
    std::uint64_t prompt_tokens = 0;
    std::uint64_t completion_tokens = 0;
    // Of prompt_tokens, those taken from the prefix cache (or a running sequence) rather than
    // computed: usage.prompt_tokens_details.cached_tokens, as OpenAI reports it.
    std::uint64_t cached_tokens = 0;
    nlohmann::ordered_json json() const;
};

// One generated token's log-probability as a response shows it: the token's bytes (maybe
// an incomplete UTF-8 character, written with U+FFFD in JSON strings; chat's `bytes` keep
// them) and the most likely tokens'.
struct LogprobEntry {
    std::string token;
    double logprob = 0.0;
    std::vector<std::pair<std::string, double>> top;
    std::uint64_t text_offset = 0;  // completions: where the token starts in the choice's text
    bool unscored = false;          // echo's first prompt token: null logprob and top
};

struct Choice {
    std::uint32_t index = 0;
    std::string text;
    std::string finish_reason;                          // "stop" or "length"
    std::optional<std::vector<LogprobEntry>> logprobs;  // absent: "logprobs": null
    std::vector<ToolCall> tool_calls;                   // chat: the message's (content null)
};

// OpenAI's logprobs object: completions {tokens, token_logprobs, top_logprobs, text_offset},
// chat {content: [{token, logprob, bytes, top_logprobs}], refusal: null}.
nlohmann::ordered_json logprobs_json(Endpoint endpoint, const std::vector<LogprobEntry>& entries);

// What every response and chunk of one request shares.
struct ResponseHead {
    Endpoint endpoint = Endpoint::Completions;
    std::string id;  // "cmpl-..." or "chatcmpl-..."
    std::int64_t created = 0;
    std::string model;
};

// A whole (not streamed) response.
nlohmann::ordered_json completion_body(const ResponseHead& head, const std::vector<Choice>& choices,
                                       const Usage& usage);
// One streamed chunk of choice `index`. Chat: `role_only` is the first chunk, which carries
// the assistant's role and no text. `finish_reason` marks a choice's last chunk.
// `logprobs`: the tokens this chunk's text came from (null when not asked for).
nlohmann::ordered_json chunk_body(const ResponseHead& head, std::uint32_t index, const std::string& text,
                                  const std::optional<std::string>& finish_reason, bool role_only = false,
                                  const std::vector<LogprobEntry>* logprobs = nullptr);
// Chat: the chunk of choice `index` that carries its tool calls whole (id, name, arguments),
// as OpenAI's first tool-call delta does.
nlohmann::ordered_json tool_calls_chunk_body(const ResponseHead& head, std::uint32_t index,
                                             const std::vector<ToolCall>& calls);
// The last chunk with stream_options.include_usage: no choices, the usage counts.
nlohmann::ordered_json usage_chunk_body(const ResponseHead& head, const Usage& usage);

}  // namespace vkf::serve
