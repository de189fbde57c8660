#pragma once
// vkf-server's HTTP routes (OpenAI's API over the engine and the encoder) on a cpp-httplib
// server: authentication, body limits, and every failure as OpenAI's error object.

#include "apps/server/engine.hpp"
#include "host/model/encoder.hpp"
#include "host/serve/metrics.hpp"
#include "host/serve/request.hpp"
#include "host/spec/pooling.hpp"
#include "host/text/chat_format.hpp"
#include "host/text/tokenizer.hpp"

#include <httplib.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace vkf::server {

// A decoder served through the engine: completions and chat.
struct ServedDecoder {
    std::string name;  // what /v1/models lists and responses echo
    Engine* engine = nullptr;
    const text::Tokenizer* tokenizer = nullptr;
    std::uint32_t vocab_size = 0;
    text::ChatFormat chat_format = text::ChatFormat::None;
    std::vector<std::uint32_t> eos_ids;
    std::uint32_t sequence_tokens = 0;    // KV capacity of one sequence (--ctx)
    std::uint32_t max_prompt_tokens = 0;  // --max-prompt-tokens
};

// A JinaBERT encoder: embeddings. encode() runs one sequence at a time, under `mutex`.
struct ServedEncoder {
    std::string name;
    Encoder* encoder = nullptr;
    const text::Tokenizer* tokenizer = nullptr;
    Pooling pooling = Pooling::Mean;
    std::uint32_t max_tokens = 0;  // per input
    std::mutex mutex;
};

struct ServerSettings {
    std::optional<std::string> api_key;
    std::uint64_t max_body_bytes = 1 << 20;
    serve::RequestLimits limits;
};

struct Served {
    ServerSettings settings;
    std::optional<ServedDecoder> decoder;
    ServedEncoder* encoder = nullptr;
    serve::Metrics* metrics = nullptr;
    std::string device;  // the device's name, on the page at / (page_route.hpp)
};

void install_routes(httplib::Server& http, Served& served);

}  // namespace vkf::server
