#pragma once
// The bodies of vkf-server's POST routes, read into typed requests: every field checked for
// its type and range before anything reaches the model, and every refusal an ApiError (400)
// whose message and `param` name the field ("messages[2].role", "max_tokens"). Fields
// OpenAI defines that change nothing here (user, metadata...) are ignored; fields that
// would change the answer but are not implemented (functions, mirostat...)
// are refused rather than silently dropped, unless they hold their neutral value, and so is
// any field not listed (request_field_table.hpp). Token-level limits (prompt length)
// are checked where the prompt is tokenized; the limits here bound what parsing may cost.

#include "host/serve/tool_types.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vkf::serve {

struct RequestLimits {
    std::uint32_t max_tokens = 4096;  // most tokens one request may ask to generate
    std::uint32_t max_n = 4;          // most choices per request
    std::uint32_t max_stops = 4;      // as OpenAI
    std::uint32_t max_stop_bytes = 256;
    std::uint32_t max_messages = 1024;
    std::uint32_t max_inputs = 256;        // embeddings inputs per request
    std::uint32_t max_prompt_ids = 65536;  // a prompt given as token ids
    std::uint32_t max_json_depth = 32;
    std::uint32_t max_logit_bias = 1024;  // logit_bias entries
    std::uint32_t max_prompts = 16;       // prompts of one completion request
};

struct ChatMessageIn {
    std::string role;  // checked against the chat format where the prompt is rendered
    std::string content;
};

enum class Endpoint { Completions, Chat };

// A completion prompt: text, or token ids.
struct PromptIn {
    std::optional<std::string> text;
    std::vector<std::uint32_t> ids;
};

struct GenerationRequest {
    Endpoint endpoint = Endpoint::Completions;
    std::string model;  // echoed back; the server serves one model whatever the name
    // Completions: one or more prompts; choice j of prompt i has index i * n + j, as OpenAI's.
    std::vector<PromptIn> prompts;
    // Chat: the conversation.
    std::vector<ChatMessageIn> messages;
    std::optional<std::uint32_t> max_tokens;  // absent: as many as the context allows
    double temperature = 1.0;                 // OpenAI's default
    double top_p = 1.0;
    std::uint32_t top_k = 0;  // not OpenAI's; llama.cpp's server and others take it
    std::optional<std::uint64_t> seed;
    // The sampler chain's other stages (host/sample/sampler_stages.hpp); min_p, typical_p,
    // repetition_penalty and repeat_last_n are llama-server's and vLLM's, not OpenAI's.
    double min_p = 0.0;
    double typical_p = 1.0;
    double repetition_penalty = 1.0;
    double presence_penalty = 0.0;
    double frequency_penalty = 0.0;
    std::optional<std::uint32_t> repeat_last_n;                // the penalties' window; absent: the sampler's
    std::vector<std::pair<std::uint32_t, double>> logit_bias;  // token id, bias in [-100, 100]
    // Set: each token's logprob and the N most likely (completions logprobs N <= 5; chat
    // logprobs true, top_logprobs N <= 20).
    std::optional<std::uint32_t> logprobs;
    bool echo = false;  // completions: the prompt before the text (and its logprobs)
    std::vector<std::string> stop;
    std::uint32_t n = 1;
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage
    bool ignore_eos = false;     // not OpenAI's: generate past the end-of-sequence token
    // vLLM's: prefix-cache blocks are shared only between requests with the same salt (a
    // tenant's), so that no other can time its prompts. Absent: the unsalted cache.
    std::optional<std::string> cache_salt;
    // GBNF the text must follow: grammar, json_schema or response_format (request_format.hpp).
    std::optional<std::string> grammar;
    // Chat: tools and tool_choice (tool_calls.hpp); with a choice but none, `grammar` is the
    // call's and the tools are in the prompt.
    std::optional<ToolRequest> tools;
};

struct EmbeddingRequest {
    std::string model;
    std::vector<std::string> texts;               // inputs as text, or
    std::vector<std::vector<std::uint32_t>> ids;  // inputs as token ids
    bool base64 = false;                          // encoding_format "base64": little-endian float32
};

GenerationRequest parse_completion_request(std::string_view body, const RequestLimits& limits);
GenerationRequest parse_chat_request(std::string_view body, const RequestLimits& limits);
EmbeddingRequest parse_embedding_request(std::string_view body, const RequestLimits& limits);

// Standard base64 (RFC 4648, padded) of bytes, as OpenAI's encoding_format "base64" sends floats.
std::string base64_encode(std::string_view bytes);

}  // namespace vkf::serve
