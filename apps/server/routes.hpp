#pragma once
// vkf-server's HTTP routes (OpenAI's API over the engine and the encoder) on a cpp-httplib
// server: authentication, body limits, and every failure as OpenAI's error object.

#include "apps/server/engine.hpp"
#include "host/grammar/piece_trie.hpp"
#include "host/model/encoder.hpp"
#include "host/serve/access.hpp"
#include "host/serve/api_error.hpp"
#include "host/serve/metrics.hpp"
#include "host/serve/request.hpp"
#include "host/spec/pooling.hpp"
#include "host/text/chat_format.hpp"
#include "host/text/tokenizer.hpp"

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
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
    // Each token's bytes, for the grammars of grammar, json_schema and response_format.
    std::shared_ptr<const grammar::PieceTrie> pieces;
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
    serve::HostPolicy hosts;  // the Host headers answered (--host, --allowed-host)
    serve::CorsPolicy cors;   // the origins whose pages may read the answers (--cors-origin)
};

// The streamed responses not yet written to their end: a stopping server lets them send
// their last events before it closes its connections.
class OpenStreams {
public:
    class Token {
    public:
        explicit Token(OpenStreams& owner) : owner_(owner) {}
        Token(const Token&) = delete;
        Token& operator=(const Token&) = delete;
        ~Token();

    private:
        OpenStreams& owner_;
    };
    // Counts one stream until the token is dropped.
    std::shared_ptr<Token> open();
    // Whether every stream was done with within `timeout`.
    bool wait_closed(std::chrono::milliseconds timeout);

private:
    std::mutex mutex_;
    std::condition_variable closed_;
    std::uint32_t open_ = 0;
};

// Why the server generates no more (a rank of its split failed, apps/server/ranks.hpp): set
// from the split's watcher thread, reported by /health until the server stops.
class ServerFailure {
public:
    void set(std::string why) {
        const std::lock_guard lock(mutex_);
        why_ = std::move(why);
    }
    std::optional<std::string> get() const {
        const std::lock_guard lock(mutex_);
        return why_;
    }

private:
    mutable std::mutex mutex_;
    std::optional<std::string> why_;
};

// The routes' families at /metrics, declared by install_routes.
struct RouteCounters {
    explicit RouteCounters(serve::Metrics& metrics);
    serve::Metrics::Counter requests;          // by route and status
    serve::Metrics::Counter errors;            // by the error object's code (error_kind)
    serve::Metrics::Counter embedding_tokens;  // through the embedding model
};

struct Served {
    ServerSettings settings;
    ServerFailure failure;
    std::optional<ServedDecoder> decoder;
    ServedEncoder* encoder = nullptr;
    serve::Metrics* metrics = nullptr;
    std::optional<RouteCounters> counters;  // install_routes declares them in `metrics`
    OpenStreams open_streams;
    std::string device;  // the device's name, on the page at / (page_route.hpp)
};

void install_routes(httplib::Server& http, Served& served);

// What every route's answer shares: a JSON body, an error as OpenAI's error object (503 with
// Retry-After), the label vkf_errors_total counts it under.
void send_json(httplib::Response& res, int status, const nlohmann::ordered_json& body);
void send_error(httplib::Response& res, const serve::ApiError& error);
std::string error_kind(const serve::ApiError& e);

}  // namespace vkf::server
