#pragma once
// vkf-server's engine: one thread owns the Batch and its BatchGenerator and steps them;
// HTTP handler threads never touch either. A handler submits a Job through a bounded,
// thread-safe queue and reads what its generations produce from the Job's Channel. Jobs
// join the running batch at the next step (continuous batching) while fewer than
// `parallel` sequences run; the rest wait in the queue, and a submission past the queue is
// refused at once (the handler answers 503) so that no request hangs.

#include "host/model/batch_generation.hpp"
#include "host/serve/metrics.hpp"
#include "host/text/tokenizer.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace vkf::server {

struct Event {
    // Aborted: the server is stopping (a signal); nothing follows.
    enum class Kind { Text, End, Failed, Aborted };
    Kind kind = Kind::Text;
    std::uint32_t index = 0;    // which of the request's n choices
    std::string text;           // Text: the next piece (complete UTF-8, stop strings held back)
    std::string finish_reason;  // End: "stop" or "length"
    std::uint32_t tokens = 0;   // End: tokens generated
    // End: prompt tokens taken from the prefix cache or a running sequence, not computed.
    std::uint32_t cached_tokens = 0;
    std::string error;  // Failed: what went wrong
    // Text and End, with Job options.logprobs: the tokens generated since the last event's
    // (a Text event's piece may hold back a token's text; its logprob waits with it).
    std::vector<TokenLogprobs> logprobs;
    std::vector<TokenLogprobs> prompt_logprobs;  // End, with Job options.prompt_logprobs
};

// From the engine thread to one request's handler thread.
class Channel {
public:
    void push(Event event);
    // The events that arrived, waiting up to `timeout` for the first one.
    std::vector<Event> wait(std::chrono::milliseconds timeout);
    // The client is gone: the engine cancels the generations at its next step and frees
    // their KV blocks.
    void cancel() { cancelled_ = true; }
    bool cancelled() const { return cancelled_; }

private:
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<Event> events_;
    std::atomic<bool> cancelled_ = false;
};

struct Job {
    std::vector<std::uint32_t> prompt;
    GenerationOptions options;       // n_predict, sampling, stop_ids (on_token is the engine's)
    std::vector<std::string> stops;  // stop strings, chat format's included
    std::uint32_t n = 1;             // choices: sequences with seeds seed, seed + 1, ...
};

struct EngineOptions {
    std::uint32_t parallel = 4;  // sequences running at once
    std::uint32_t queue = 16;    // jobs waiting beyond them
};

class Engine {
public:
    Engine(BatchFront& batch, const text::Tokenizer& tokenizer, serve::Metrics& metrics, EngineOptions options);
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;
    ~Engine();  // stops the thread; running generations end with a Failed event

    // Null when every slot and queue place is taken, or after abort_all().
    std::shared_ptr<Channel> submit(Job job);
    // The server is stopping: every running and queued job gets an Aborted event and its
    // sequences are cancelled, and submit() refuses from now on. Returns once the engine
    // thread has done it (at most one step), or after `timeout`.
    void abort_all(std::chrono::milliseconds timeout);
    bool stopping() const { return stopping_; }
    const EngineOptions& options() const { return options_; }
    // Why a step failed (on the device, or a rank of the split), if one did: the health check
    // reports it.
    std::optional<std::string> failure() const;

private:
    struct Queued {
        Job job;
        std::shared_ptr<Channel> channel;
    };
    struct Generation;
    // The engine's families at /metrics, declared by the constructor.
    struct Counters {
        explicit Counters(serve::Metrics& metrics);
        serve::Metrics::Gauge active_sequences, queued_requests, kv_blocks_used, kv_blocks_free, tokens_per_second;
        serve::Metrics::Counter prompt_tokens, generated_tokens, cancelled_sequences, batch_steps;
        serve::Metrics::Counter pipeline_steps, pipeline_overlapped_steps;
        serve::Metrics::Gauge pipeline_max_in_flight;
        // The prefix cache's (host/sched/prefix_cache.hpp); zeros with --no-prefix-cache.
        serve::Metrics::Counter prefix_lookups, prefix_hit_tokens, prefix_evictions;
        serve::Metrics::Gauge prefix_blocks;
    };
    void loop();
    void start(Queued& queued);
    void cancel_gone();
    void step();
    void fail_all(const std::string& message);
    void end_all(Event::Kind kind, const std::string& message);
    void drop_cancelled_queued();  // under mutex_
    void end(SequenceId id, const GenerationResult& result);
    void publish();

    BatchFront& batch_;
    const text::Tokenizer& tokenizer_;
    Counters metrics_;
    EngineOptions options_;
    BatchGenerator generator_;
    std::map<SequenceId, std::unique_ptr<Generation>> running_;  // engine thread only

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Queued> queue_;
    std::uint32_t admitted_ = 0;  // sequences running or about to (guarded by mutex_)
    bool stop_ = false;
    bool abort_ = false;       // abort_all() asked
    bool abort_done_ = false;  // and the engine thread did it
    std::condition_variable aborted_;
    std::atomic<bool> stopping_ = false;
    std::optional<std::string> failure_;  // guarded by mutex_
    std::deque<std::pair<std::chrono::steady_clock::time_point, std::uint64_t>> rate_window_;
    std::thread thread_;
};

}  // namespace vkf::server
