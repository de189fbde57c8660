#include "apps/server/generation_route.hpp"

#include "apps/server/connections.hpp"
#include "base/error.hpp"
#include "host/serve/api_error.hpp"
#include "host/serve/responses.hpp"
#include "host/serve/sse.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>

namespace vkf::server {
namespace {

using json = nlohmann::ordered_json;
using namespace std::chrono_literals;

std::string response_id(serve::Endpoint endpoint) {
    static std::atomic<std::uint64_t> counter = 0;
    static const std::uint64_t boot = std::random_device{}();
    char text[48];
    std::snprintf(text, sizeof text, "%s-%016llx%08llx", endpoint == serve::Endpoint::Chat ? "chatcmpl" : "cmpl",
                  static_cast<unsigned long long>(boot), static_cast<unsigned long long>(++counter));
    return text;
}

// The prompt's token ids and the stop strings the request ends at.
std::vector<std::uint32_t> prompt_ids(const ServedDecoder& d, const serve::GenerationRequest& r,
                                      std::vector<std::string>& stops) {
    stops = r.stop;
    if (r.endpoint == serve::Endpoint::Chat) {
        if (d.chat_format == text::ChatFormat::None) {
            throw serve::invalid_request("the model " + d.name +
                                             " has no chat format vkf-server knows (none was found in its "
                                             "tokenizer_config.json or generation_config.json); start vkf-server "
                                             "with --chat-format chatml|baichuan|jais, or use /v1/completions",
                                         "messages", "chat_format_unknown");
        }
        std::vector<text::ChatMessage> messages;
        for (const serve::ChatMessageIn& m : r.messages) {
            messages.push_back({m.role, m.content});
        }
        std::vector<std::uint32_t> ids;
        try {
            ids = text::render_chat_ids(d.chat_format, messages, *d.tokenizer);
        } catch (const Error& e) {
            throw serve::invalid_request(std::string("messages: ") + e.what(), "messages");
        }
        for (std::string& s : text::chat_stop_strings(d.chat_format)) {
            stops.push_back(std::move(s));
        }
        return ids;
    }
    if (!r.prompt_text) {
        for (std::size_t i = 0; i < r.prompt_ids.size(); ++i) {
            if (r.prompt_ids[i] >= d.vocab_size) {
                throw serve::invalid_request("prompt[" + fmt::to_string(i) + "] is token id " +
                                                 fmt::to_string(r.prompt_ids[i]) + ", outside the vocabulary of " +
                                                 fmt::to_string(d.vocab_size),
                                             "prompt");
            }
        }
        return r.prompt_ids;
    }
    try {
        return d.tokenizer->encode(*r.prompt_text);
    } catch (const Error& e) {
        throw serve::invalid_request(std::string("prompt: ") + e.what(), "prompt");
    }
}

Job make_job(const Served& served, const serve::GenerationRequest& r) {
    const ServedDecoder& d = *served.decoder;
    Job job;
    job.prompt = prompt_ids(d, r, job.stops);
    const auto tokens = static_cast<std::uint32_t>(job.prompt.size());
    if (tokens == 0) {
        throw serve::invalid_request("the prompt encodes to no tokens",
                                     r.endpoint == serve::Endpoint::Chat ? "messages" : "prompt");
    }
    if (tokens > d.max_prompt_tokens) {
        throw serve::invalid_request("the prompt is " + fmt::to_string(tokens) + " tokens; the server's limit is " +
                                         fmt::to_string(d.max_prompt_tokens) + " (--max-prompt-tokens)",
                                     r.endpoint == serve::Endpoint::Chat ? "messages" : "prompt",
                                     "context_length_exceeded");
    }
    // Without max_tokens: as many as the sequence has room for, up to the server's limit.
    const std::uint32_t room = d.sequence_tokens - tokens + 1;
    const std::uint32_t n_predict = r.max_tokens.value_or(std::min(room, served.settings.limits.max_tokens));
    if (n_predict > room) {
        throw serve::invalid_request("a " + fmt::to_string(tokens) + "-token prompt and max_tokens " +
                                         fmt::to_string(n_predict) + " need " + fmt::to_string(tokens + n_predict - 1) +
                                         " tokens of context; a sequence holds " + fmt::to_string(d.sequence_tokens) +
                                         " (--ctx)",
                                     "max_tokens", "context_length_exceeded");
    }
    if (r.n > d.engine->options().parallel) {
        throw serve::invalid_request("n is " + fmt::to_string(r.n) + "; this server runs at most " +
                                         fmt::to_string(d.engine->options().parallel) +
                                         " sequences at once (--parallel)",
                                     "n");
    }
    static std::atomic<std::uint64_t> unseeded = std::random_device{}();
    job.options.n_predict = n_predict;
    job.options.sampling = {.temperature = static_cast<float>(r.temperature),
                            .top_k = r.top_k,
                            .top_p = static_cast<float>(r.top_p),
                            .seed = r.seed.value_or(unseeded.fetch_add(0x9E3779B97F4A7C15ull))};
    if (!r.ignore_eos) {
        job.options.stop_ids = d.eos_ids;
    }
    job.n = r.n;
    return job;
}

// What a streamed response has sent so far; shared by the content provider's calls.
struct Stream {
    std::shared_ptr<Channel> channel;
    std::shared_ptr<OpenStreams::Token> open;  // counted until the response is done with
    serve::ResponseHead head;
    std::uint32_t n = 1;
    bool include_usage = false;
    serve::Usage usage;
    std::uint32_t ended = 0;
    bool started = false;
    bool finished = false;
    std::chrono::steady_clock::time_point last_write = std::chrono::steady_clock::now();
};

// One call of the chunked content provider: what has arrived since, written as events.
// False when the client is gone (the releaser then cancels the generations).
bool stream_some(Stream& s, httplib::DataSink& sink) {
    std::string out;
    if (!s.started && s.head.endpoint == serve::Endpoint::Chat) {
        for (std::uint32_t i = 0; i < s.n; ++i) {
            out += serve::sse_event(serve::chunk_body(s.head, i, "", std::nullopt, true));
        }
    }
    s.started = true;
    bool failed = false;
    for (Event& e : s.channel->wait(out.empty() ? 200ms : 0ms)) {
        switch (e.kind) {
            case Event::Kind::Text:
                out += serve::sse_event(serve::chunk_body(s.head, e.index, e.text, std::nullopt));
                break;
            case Event::Kind::End:
                out += serve::sse_event(serve::chunk_body(s.head, e.index, "", e.finish_reason));
                s.usage.completion_tokens += e.tokens;
                ++s.ended;
                break;
            case Event::Kind::Failed:
                // Past the headers a status cannot change: OpenAI's clients read an error
                // object sent as an event and raise it.
                out += serve::sse_event(serve::server_error(e.error).body());
                failed = true;
                break;
            case Event::Kind::Aborted:
                // The server is stopping: the same, so that the client knows the text is
                // cut short (a finish_reason would pass for a whole answer).
                out += serve::sse_event(serve::shutting_down().body());
                failed = true;
                break;
        }
        if (failed) {
            break;
        }
    }
    const bool done = failed || s.ended == s.n;
    if (done) {
        if (s.include_usage && !failed) {
            out += serve::sse_event(serve::usage_chunk_body(s.head, s.usage));
        }
        out += serve::kSseDone;
    }
    const auto now = std::chrono::steady_clock::now();
    // Nothing to say for a while (a long prompt, a full batch): a comment finds out whether
    // the client is still there.
    if (out.empty() && now - s.last_write > 2s) {
        out = serve::kSseKeepAlive;
    }
    if (!out.empty()) {
        if (!sink.write(out.data(), out.size())) {
            return false;
        }
        s.last_write = now;
    }
    if (done) {
        s.finished = true;
        if (failed) {
            s.channel->cancel();
        }
        sink.done();
    }
    return true;
}

}  // namespace

void generation(Served& served, serve::Endpoint endpoint, const httplib::Request& req, httplib::Response& res) {
    const serve::GenerationRequest r = endpoint == serve::Endpoint::Chat
                                           ? serve::parse_chat_request(req.body, served.settings.limits)
                                           : serve::parse_completion_request(req.body, served.settings.limits);
    if (!served.decoder) {
        throw serve::invalid_request("this server serves only the embedding model " +
                                         (served.encoder ? served.encoder->name : std::string()) +
                                         "; it has no completions",
                                     "model", "model_not_found");
    }
    const ServedDecoder& d = *served.decoder;
    Job job = make_job(served, r);
    const serve::ResponseHead head{
        .endpoint = endpoint,
        .id = response_id(endpoint),
        .created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                       .count(),
        .model = d.name};
    const serve::Usage prompt_usage{.prompt_tokens = job.prompt.size()};
    const std::uint32_t n = job.n;
    std::shared_ptr<Channel> channel = d.engine->submit(std::move(job));
    if (!channel) {
        if (d.engine->stopping()) {
            throw serve::shutting_down();
        }
        throw serve::overloaded(d.engine->options().parallel, d.engine->options().queue);
    }
    if (r.stream) {
        auto s = std::make_shared<Stream>(Stream{.channel = channel,
                                                 .open = served.open_streams.open(),
                                                 .head = head,
                                                 .n = n,
                                                 .include_usage = r.include_usage,
                                                 .usage = prompt_usage});
        res.status = 200;
        res.set_header("Cache-Control", "no-cache");
        res.set_chunked_content_provider(
            "text/event-stream", [s](std::size_t, httplib::DataSink& sink) { return stream_some(*s, sink); },
            [s](bool) {
                if (!s->finished) {
                    s->channel->cancel();
                }
                s->open.reset();
            });
        return;
    }
    // Nothing is written until the answer is whole, so only a look at the socket tells
    // whether the client is still waiting; one that left has its sequences cancelled at the
    // engine's next step.
    const ClientConnection client;
    std::vector<serve::Choice> choices(n);
    serve::Usage usage = prompt_usage;
    for (std::uint32_t ended = 0; ended < n;) {
        for (Event& e : channel->wait(100ms)) {
            serve::Choice& c = choices.at(e.index);
            c.index = e.index;
            if (e.kind == Event::Kind::Text) {
                c.text += e.text;
            } else if (e.kind == Event::Kind::End) {
                c.finish_reason = e.finish_reason;
                usage.completion_tokens += e.tokens;
                ++ended;
            } else if (e.kind == Event::Kind::Aborted) {
                throw serve::shutting_down();
            } else {
                channel->cancel();
                throw serve::server_error(e.error);
            }
        }
        if (ended < n && client.gone()) {
            channel->cancel();
            // A client that leaves while the server stops is told why all the same.
            if (d.engine->stopping()) {
                throw serve::shutting_down();
            }
            throw serve::client_gone();
        }
    }
    res.status = 200;
    res.set_content(serve::completion_body(head, choices, usage).dump(-1, ' ', false, json::error_handler_t::replace),
                    "application/json");
}

}  // namespace vkf::server
