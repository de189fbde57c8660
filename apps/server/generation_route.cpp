#include "apps/server/generation_route.hpp"

#include "apps/server/connections.hpp"
#include "apps/server/logprob_entries.hpp"
#include "base/error.hpp"
#include "host/grammar/token_constraint.hpp"
#include "host/sched/prefix_cache.hpp"
#include "host/serve/api_error.hpp"
#include "host/serve/responses.hpp"
#include "host/serve/sse.hpp"
#include "host/serve/tool_calls.hpp"
#include "host/util/splitmix64.hpp"

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
std::vector<std::uint32_t> prompt_ids(const ServedDecoder& d, const serve::GenerationRequest& r, std::size_t index,
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
    const serve::PromptIn& prompt = r.prompts.at(index);
    const std::string param = r.prompts.size() == 1 ? "prompt" : fmt::format("prompt[{}]", index);
    if (!prompt.text) {
        for (std::size_t i = 0; i < prompt.ids.size(); ++i) {
            if (prompt.ids[i] >= d.vocab_size) {
                throw serve::invalid_request(fmt::format("{}[{}] is token id {}, outside the vocabulary of {}", param,
                                                         i, prompt.ids[i], d.vocab_size),
                                             "prompt");
            }
        }
        return prompt.ids;
    }
    try {
        return d.tokenizer->encode(*prompt.text);
    } catch (const Error& e) {
        throw serve::invalid_request(fmt::format("{}: {}", param, e.what()), "prompt");
    }
}

// The request's sampler chain; a logit_bias id outside the vocabulary is the client's error.
SamplingParams sampling_params(const serve::GenerationRequest& r, std::uint32_t vocab_size) {
    SamplingParams p{.temperature = static_cast<float>(r.temperature),
                     .top_k = r.top_k,
                     .top_p = static_cast<float>(r.top_p),
                     .seed = r.seed.value_or(0),
                     .min_p = static_cast<float>(r.min_p),
                     .typical_p = static_cast<float>(r.typical_p),
                     .repetition_penalty = static_cast<float>(r.repetition_penalty),
                     .presence_penalty = static_cast<float>(r.presence_penalty),
                     .frequency_penalty = static_cast<float>(r.frequency_penalty)};
    if (r.repeat_last_n) {
        p.penalty_last_n = *r.repeat_last_n;
    }
    for (const auto& [id, bias] : r.logit_bias) {
        if (id >= vocab_size) {
            throw serve::invalid_request(
                fmt::format("logit_bias[\"{}\"] is for token {}, outside the vocabulary of {}", id, id, vocab_size),
                "logit_bias");
        }
        p.logit_bias.push_back({id, static_cast<float>(bias)});
    }
    return p;
}

Job make_job(const Served& served, const serve::GenerationRequest& r, std::size_t prompt_index) {
    const ServedDecoder& d = *served.decoder;
    Job job;
    job.prompt = prompt_ids(d, r, prompt_index, job.stops);
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
    job.options.sampling = sampling_params(r, d.vocab_size);
    if (!r.seed) {
        job.options.sampling.seed = unseeded.fetch_add(kGoldenGamma);
    }
    job.options.logprobs = r.logprobs;
    job.options.prompt_logprobs = r.echo && r.logprobs.has_value();
    if (!r.ignore_eos) {
        job.options.stop_ids = d.eos_ids;
    }
    if (r.cache_salt) {
        job.options.cache_salt = PrefixCache::salt(*r.cache_salt);
    }
    if (r.grammar) {  // checked when the request was read
        job.options.grammar = std::make_shared<const grammar::Constraint>(
            grammar::Constraint{.grammar = grammar::parse_gbnf(*r.grammar), .pieces = d.pieces});
    }
    job.n = r.n;
    return job;
}

// A streamed echo: each choice's first chunk is the prompt's text. With logprobs the prompt's
// entries come with the choice's End event only, so its chunks wait until then (then go out
// in order: the prompt's, then the generated ones).
struct StreamedEcho {
    std::string text;
    std::uint32_t first_id = 0;
    std::vector<bool> sent;         // per choice: the prompt's chunk went out
    std::vector<std::string> held;  // per choice, with logprobs: its chunks until it ends
};

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
    const ServedDecoder* logprobs = nullptr;  // set when the request asked for logprobs
    std::vector<std::uint64_t> offsets;       // per choice, for text_offset
    // With tools: each choice's text is held until it ends, then sent as tool_calls or text.
    // A copy: the stream outlives the request's handler.
    std::optional<serve::ToolRequest> tools;
    std::vector<std::string> held;
    std::optional<StreamedEcho> echo;
};

// A streamed echo's part in a choice's `chunk`: the prompt's chunk before the choice's first
// (with logprobs, once the choice ends). Returns what goes out now.
std::string echo_chunks(Stream& s, const Event& e, std::string chunk) {
    StreamedEcho& echo = *s.echo;
    if (echo.sent.at(e.index)) {
        return chunk;
    }
    if (s.logprobs == nullptr) {
        echo.sent.at(e.index) = true;
        return serve::sse_event(serve::chunk_body(s.head, e.index, echo.text, std::nullopt)) + chunk;
    }
    std::string& held = echo.held.at(e.index);
    held += chunk;
    if (e.kind != Event::Kind::End) {
        return {};
    }
    echo.sent.at(e.index) = true;
    const std::vector<serve::LogprobEntry> entries = prompt_entries(*s.logprobs, echo.first_id, e.prompt_logprobs);
    return serve::sse_event(serve::chunk_body(s.head, e.index, echo.text, std::nullopt, false, &entries)) +
           std::exchange(held, {});
}

// A chat choice's text with tools: its tool call (content none, finish_reason "tool_calls"),
// or the text as it is.
void resolve_tool_call(const serve::ToolRequest& tools, serve::Choice& c) {
    if (std::optional<serve::ToolCall> call = serve::parse_tool_call(c.text, tools)) {
        c.tool_calls = {std::move(*call)};
        c.text.clear();
        if (c.finish_reason == "stop") {
            c.finish_reason = "tool_calls";
        }
    }
}

// With tools: a choice's text is held; at its end it goes out as one tool-call chunk (or as
// text) and the finishing chunk. Returns whether the event was handled so (End: counted).
bool stream_tool_event(Stream& s, const Event& e, std::string& out) {
    s.held.resize(s.n);
    if (e.kind == Event::Kind::Text) {
        s.held.at(e.index) += e.text;
        return true;
    }
    serve::Choice c{.index = e.index, .text = std::move(s.held.at(e.index)), .finish_reason = e.finish_reason};
    resolve_tool_call(*s.tools, c);
    if (!c.tool_calls.empty()) {
        out += serve::sse_event(serve::tool_calls_chunk_body(s.head, e.index, c.tool_calls));
    } else if (!c.text.empty()) {
        out += serve::sse_event(serve::chunk_body(s.head, e.index, c.text, std::nullopt));
    }
    out += serve::sse_event(serve::chunk_body(s.head, e.index, "", c.finish_reason));
    s.usage.completion_tokens += e.tokens;
    ++s.ended;
    return true;
}

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
            case Event::Kind::End: {
                if (s.tools && stream_tool_event(s, e, out)) {
                    break;
                }
                std::vector<serve::LogprobEntry> entries;
                if (s.logprobs != nullptr) {
                    entries = logprob_entries(*s.logprobs, e.logprobs, s.offsets.at(e.index));
                }
                const bool end = e.kind == Event::Kind::End;
                std::string chunk = serve::sse_event(serve::chunk_body(
                    s.head, e.index, end ? "" : e.text, end ? std::optional(e.finish_reason) : std::nullopt, false,
                    s.logprobs != nullptr ? &entries : nullptr));
                out += s.echo ? echo_chunks(s, e, std::move(chunk)) : chunk;
                if (!end) {
                    break;
                }
                s.usage.completion_tokens += e.tokens;
                if (e.index == 0) {
                    s.usage.cached_tokens += e.cached_tokens;
                }
                ++s.ended;
                break;
            }
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
    // One job per prompt (chat: one), all built before any is submitted, so that a bad
    // prompt refuses the request whole.
    const std::size_t prompts = endpoint == serve::Endpoint::Chat ? 1 : r.prompts.size();
    std::vector<Job> jobs;
    for (std::size_t i = 0; i < prompts; ++i) {
        jobs.push_back(make_job(served, r, i));
    }
    const serve::ResponseHead head{
        .endpoint = endpoint,
        .id = response_id(endpoint),
        .created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                       .count(),
        .model = d.name};
    serve::Usage prompt_usage;
    for (const Job& job : jobs) {
        prompt_usage.prompt_tokens += job.prompt.size();
    }
    const std::uint32_t n = r.n;
    // echo: each prompt's text before its choices' text, and its first token (which has no
    // logprob: nothing comes before it).
    std::vector<std::string> echoed(jobs.size());
    std::vector<std::uint32_t> first_ids(jobs.size());
    for (std::size_t p = 0; r.echo && p < jobs.size(); ++p) {
        echoed[p] = r.prompts[p].text ? *r.prompts[p].text : d.tokenizer->decode(jobs[p].prompt);
        first_ids[p] = jobs[p].prompt.front();
    }
    std::vector<std::shared_ptr<Channel>> channels;
    for (Job& job : jobs) {
        std::shared_ptr<Channel> channel = d.engine->submit(std::move(job));
        if (!channel) {
            for (const auto& submitted : channels) {
                submitted->cancel();
            }
            if (d.engine->stopping()) {
                throw serve::shutting_down();
            }
            throw serve::overloaded(d.engine->options().parallel, d.engine->options().queue);
        }
        channels.push_back(std::move(channel));
    }
    const std::shared_ptr<Channel>& channel = channels.front();  // the one a stream has
    if (r.stream) {
        auto s =
            std::make_shared<Stream>(Stream{.channel = channel,
                                            .open = served.open_streams.open(),
                                            .head = head,
                                            .n = n,
                                            .include_usage = r.include_usage,
                                            .usage = prompt_usage,
                                            .logprobs = r.logprobs ? &d : nullptr,
                                            .offsets = std::vector<std::uint64_t>(n),
                                            .tools = r.tools && !r.tools->grammar.empty() ? r.tools : std::nullopt});
        if (r.echo) {  // one prompt: a stream takes no more
            // The generated text's offsets start past the prompt's, as in a whole response.
            std::fill(s->offsets.begin(), s->offsets.end(), echoed.front().size());
            s->echo = StreamedEcho{.text = echoed.front(),
                                   .first_id = first_ids.front(),
                                   .sent = std::vector<bool>(n),
                                   .held = std::vector<std::string>(n)};
        }
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
    std::vector<serve::Choice> choices(n * channels.size());
    std::vector<std::uint64_t> offsets(choices.size());
    if (r.logprobs) {
        for (serve::Choice& c : choices) {
            c.logprobs.emplace();
        }
    }
    serve::Usage usage = prompt_usage;
    const auto cancel_all = [&channels] {
        for (const auto& c : channels) {
            c->cancel();
        }
    };
    for (std::size_t ended = 0; ended < choices.size();) {
        for (std::size_t p = 0; p < channels.size(); ++p) {
            // Choice j of prompt p is choice p * n + j, as OpenAI numbers them.
            for (Event& e : channels[p]->wait(channels.size() == 1 ? 100ms : 20ms)) {
                serve::Choice& c = choices.at(p * n + e.index);
                c.index = static_cast<std::uint32_t>(p * n + e.index);
                if (c.logprobs) {
                    for (serve::LogprobEntry& entry : logprob_entries(d, e.logprobs, offsets[c.index])) {
                        c.logprobs->push_back(std::move(entry));
                    }
                }
                if (e.kind == Event::Kind::Text) {
                    c.text += e.text;
                } else if (e.kind == Event::Kind::End) {
                    if (r.echo) {
                        echo_prompt(d, echoed[p], first_ids[p], e.prompt_logprobs, c);
                    }
                    c.finish_reason = e.finish_reason;
                    usage.completion_tokens += e.tokens;
                    if (e.index == 0) {  // a prompt's tokens count once, as prompt_tokens do
                        usage.cached_tokens += e.cached_tokens;
                    }
                    ++ended;
                } else if (e.kind == Event::Kind::Aborted) {
                    cancel_all();
                    throw serve::shutting_down();
                } else {
                    cancel_all();
                    throw serve::server_error(e.error);
                }
            }
        }
        if (ended < choices.size() && client.gone()) {
            cancel_all();
            // A client that leaves while the server stops is told why all the same.
            if (d.engine->stopping()) {
                throw serve::shutting_down();
            }
            throw serve::client_gone();
        }
    }
    if (r.tools && !r.tools->grammar.empty()) {
        for (serve::Choice& c : choices) {
            resolve_tool_call(*r.tools, c);
        }
    }
    res.status = 200;
    res.set_content(serve::completion_body(head, choices, usage).dump(-1, ' ', false, json::error_handler_t::replace),
                    "application/json");
}

}  // namespace vkf::server
