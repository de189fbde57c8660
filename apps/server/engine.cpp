#include "apps/server/engine.hpp"

#include "host/text/token_text_sink.hpp"

#include <utility>

namespace vkf::server {

using namespace std::chrono_literals;

void Channel::push(Event event) {
    {
        const std::lock_guard lock(mutex_);
        events_.push_back(std::move(event));
    }
    ready_.notify_one();
}

std::vector<Event> Channel::wait(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    ready_.wait_for(lock, timeout, [this] { return !events_.empty(); });
    std::vector<Event> out(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
    events_.clear();
    return out;
}

// One sequence of a job: its text decoded as it is made, stop strings held back. A client that
// goes away is cancelled through the generator (cancel_gone), not the sink's flag: that also
// ends a sequence still in its prompt, and counts it.
struct Engine::Generation {
    std::shared_ptr<Channel> channel;
    std::uint32_t index;
    text::TokenTextSink text;
    bool cancel_sent = false;             // the client went away and the generator was told
    bool failed = false;                  // a Failed event was sent: no End
    std::vector<TokenLogprobs> logprobs;  // not yet sent with an event
};

Engine::Counters::Counters(serve::Metrics& m)
    : active_sequences(m.declare_gauge("vkf_active_sequences", "Sequences in the running batch.")),
      queued_requests(m.declare_gauge("vkf_queued_requests", "Requests waiting for a slot.")),
      kv_blocks_used(m.declare_gauge("vkf_kv_blocks_used", "KV-cache blocks held by sequences.")),
      kv_blocks_free(m.declare_gauge("vkf_kv_blocks_free", "KV-cache blocks free.")),
      tokens_per_second(
          m.declare_gauge("vkf_tokens_per_second", "Tokens generated per second over the last 10 seconds.")),
      prompt_tokens(m.declare_counter("vkf_prompt_tokens_total", "Prompt tokens submitted to the batch.")),
      generated_tokens(m.declare_counter("vkf_generated_tokens_total", "Tokens generated.")),
      cancelled_sequences(
          m.declare_counter("vkf_cancelled_sequences_total", "Sequences cancelled because their client went away.")),
      batch_steps(m.declare_counter("vkf_batch_steps_total", "Forward steps of the batch.")),
      // Under mpirun (host/dist/batch_pipeline.hpp); zeros on one device.
      pipeline_steps(m.declare_counter("vkf_pipeline_steps_total", "Steps rank 0 sent down the ranks' pipeline.")),
      pipeline_overlapped_steps(m.declare_counter("vkf_pipeline_overlapped_steps_total",
                                                  "Pipeline steps started while an earlier step was in flight.")),
      pipeline_max_in_flight(m.declare_gauge("vkf_pipeline_max_in_flight", "Most pipeline steps in flight at once.")),
      prefix_lookups(m.declare_counter("vkf_prefix_cache_lookups_total", "Prompts looked up in the prefix cache.")),
      prefix_hit_tokens(
          m.declare_counter("vkf_prefix_cache_hit_tokens_total", "Prompt tokens taken from the prefix cache.")),
      prefix_evictions(m.declare_counter("vkf_prefix_cache_evictions_total",
                                         "Cached blocks given back to the pool for a running sequence.")),
      prefix_blocks(m.declare_gauge("vkf_prefix_cache_blocks", "KV-cache blocks the prefix cache keeps.")) {}

Engine::Engine(BatchFront& batch, const text::Tokenizer& tokenizer, serve::Metrics& metrics, EngineOptions options)
    : batch_(batch), tokenizer_(tokenizer), metrics_(metrics), options_(options), generator_(batch) {
    publish();
    thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
    {
        const std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
    for (auto& queued : queue_) {
        queued.channel->push({.kind = Event::Kind::Failed, .error = "the server is shutting down"});
    }
    fail_all("the server is shutting down");
}

std::shared_ptr<Channel> Engine::submit(Job job) {
    auto channel = std::make_shared<Channel>();
    {
        const std::lock_guard lock(mutex_);
        drop_cancelled_queued();  // a client that left frees its queue place at once
        std::uint32_t queued = 0;
        for (const Queued& q : queue_) {
            queued += q.job.n;
        }
        if (stop_ || stopping_ || admitted_ + queued + job.n > options_.parallel + options_.queue) {
            return nullptr;
        }
        queue_.push_back({std::move(job), channel});
        metrics_.queued_requests.set(static_cast<double>(queue_.size()));
    }
    wake_.notify_one();
    return channel;
}

void Engine::loop() {
    for (;;) {
        std::vector<Queued> starting;
        std::deque<Queued> aborted;
        bool aborting = false;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock,
                       [this] { return stop_ || (abort_ && !abort_done_) || !queue_.empty() || generator_.busy(); });
            if (stop_) {
                return;
            }
            drop_cancelled_queued();
            aborting = abort_ && !abort_done_;
            if (aborting) {
                aborted.swap(queue_);
            }
            while (!queue_.empty() && admitted_ + queue_.front().job.n <= options_.parallel) {
                admitted_ += queue_.front().job.n;
                starting.push_back(std::move(queue_.front()));
                queue_.pop_front();
            }
        }
        if (aborting) {
            for (Queued& q : aborted) {
                q.channel->push({.kind = Event::Kind::Aborted});
            }
            end_all(Event::Kind::Aborted, "the server is shutting down");
            publish();
            {
                const std::lock_guard lock(mutex_);
                abort_done_ = true;
            }
            aborted_.notify_all();
            continue;
        }
        for (Queued& q : starting) {
            start(q);
        }
        cancel_gone();
        if (generator_.busy()) {
            step();
        }
        publish();
    }
}

void Engine::abort_all(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    stopping_ = true;
    abort_ = true;
    wake_.notify_one();
    aborted_.wait_for(lock, timeout, [this] { return abort_done_; });
}

void Engine::drop_cancelled_queued() {
    std::erase_if(queue_, [](const Queued& q) { return q.channel->cancelled(); });
}

void Engine::start(Queued& q) {
    std::uint32_t started = 0;
    if (!q.channel->cancelled()) {
        try {
            for (; started < q.job.n; ++started) {
                auto gen = std::make_unique<Generation>(
                    Generation{.channel = q.channel,
                               .index = started,
                               .text = text::TokenTextSink(&tokenizer_, {.stops = q.job.stops})});
                GenerationOptions options = q.job.options;
                options.sampling.seed += started;
                if (options.logprobs) {
                    options.on_logprobs = [g = gen.get()](std::uint32_t, const TokenLogprobs& lp) {
                        g->logprobs.push_back(lp);
                    };
                }
                options.on_token = [this, g = gen.get()](std::uint32_t, std::uint32_t id) {
                    metrics_.generated_tokens.add(1);
                    try {
                        std::string piece = g->text.push(id);
                        if (!piece.empty()) {
                            g->channel->push({.kind = Event::Kind::Text,
                                              .index = g->index,
                                              .text = std::move(piece),
                                              .logprobs = std::exchange(g->logprobs, {})});
                        }
                    } catch (const std::exception& e) {  // an id the tokenizer cannot decode
                        g->channel->push({.kind = Event::Kind::Failed, .error = e.what()});
                        g->failed = true;
                    }
                    return !g->failed && g->text.go_on();
                };
                const SequenceId id = generator_.submit(q.job.prompt, std::move(options));
                running_.emplace(id, std::move(gen));
                metrics_.prompt_tokens.add(static_cast<double>(q.job.prompt.size()));
            }
        } catch (const std::exception& e) {
            q.channel->push({.kind = Event::Kind::Failed, .error = e.what()});
            q.channel->cancel();  // the siblings already started end at cancel_gone()
        }
    }
    const std::lock_guard lock(mutex_);
    admitted_ -= q.job.n - started;
}

void Engine::cancel_gone() {
    for (auto& [id, gen] : running_) {
        if (gen->channel->cancelled() && !gen->cancel_sent) {
            generator_.cancel(id);
            gen->cancel_sent = true;
            metrics_.cancelled_sequences.add(1);
        }
    }
}

void Engine::step() {
    try {
        const auto ended = generator_.step();
        metrics_.batch_steps.add(1);
        // Before any client hears its request ended: /metrics read after an answer must count
        // that request's KV blocks as given back.
        publish();
        for (const auto& [id, result] : ended) {
            end(id, result);
        }
    } catch (const std::exception& e) {
        const std::string message = std::string("the batch step failed: ") + e.what();
        {
            const std::lock_guard lock(mutex_);
            failure_ = message;
        }
        fail_all(message);
    }
}

std::optional<std::string> Engine::failure() const {
    const std::lock_guard lock(mutex_);
    return failure_;
}

void Engine::end(SequenceId id, const GenerationResult& result) {
    const auto it = running_.find(id);
    if (it == running_.end()) {
        return;
    }
    Generation& g = *it->second;
    if (!g.failed && result.stop == StopReason::Error) {  // a grammar's: the request's fault
        g.channel->push({.kind = Event::Kind::Failed, .index = g.index, .error = result.error});
        g.failed = true;
    }
    if (!g.failed) {
        if (!g.cancel_sent) {
            std::string rest = g.text.finish();  // nothing after a stop string
            if (!rest.empty()) {
                g.channel->push({.kind = Event::Kind::Text, .index = g.index, .text = std::move(rest)});
            }
        }
        const bool length = result.stop == StopReason::Length || result.stop == StopReason::CacheFull;
        g.channel->push({.kind = Event::Kind::End,
                         .index = g.index,
                         .finish_reason = length ? "length" : "stop",
                         .tokens = static_cast<std::uint32_t>(result.tokens.size()),
                         .cached_tokens = result.cached_tokens,
                         .logprobs = std::move(g.logprobs),
                         .prompt_logprobs = result.prompt_logprobs});
    }
    running_.erase(it);
    const std::lock_guard lock(mutex_);
    --admitted_;
}

void Engine::fail_all(const std::string& message) {
    end_all(Event::Kind::Failed, message);
}

// Every running generation gets a last event of `kind` (unless it failed already), and its
// sequence is cancelled and collected, its KV blocks freed.
void Engine::end_all(Event::Kind kind, const std::string& message) {
    for (auto& [id, gen] : running_) {
        if (!gen->failed) {
            gen->channel->push({.kind = kind, .index = gen->index, .error = message});
        }
        try {
            generator_.cancel(id);
        } catch (const std::exception&) {  // already ended in the failed step
        }
    }
    try {
        generator_.step();  // collects the cancelled ones; runs nothing
    } catch (const std::exception&) {
    }
    const std::lock_guard lock(mutex_);
    admitted_ -= static_cast<std::uint32_t>(running_.size());
    running_.clear();
}

void Engine::publish() {
    const auto now = std::chrono::steady_clock::now();
    const auto generated = static_cast<std::uint64_t>(metrics_.generated_tokens.value());
    rate_window_.emplace_back(now, generated);
    while (rate_window_.size() > 2 && now - rate_window_[1].first > 10s) {
        rate_window_.pop_front();
    }
    const double seconds = std::chrono::duration<double>(now - rate_window_.front().first).count();
    metrics_.tokens_per_second.set(seconds > 0 ? static_cast<double>(generated - rate_window_.front().second) / seconds
                                               : 0.0);
    metrics_.active_sequences.set(static_cast<double>(generator_.running()));
    // Blocks only the prefix cache holds are free for the asking: counted free, not used.
    const PrefixCache* cache = batch_.prefix_cache();
    const std::uint32_t reclaimable = cache != nullptr ? cache->reclaimable() : 0;
    metrics_.kv_blocks_used.set(batch_.blocks().used() - reclaimable);
    metrics_.kv_blocks_free.set(batch_.blocks().free() + reclaimable);
    if (cache != nullptr) {
        metrics_.prefix_lookups.set(static_cast<double>(cache->stats().lookups));
        metrics_.prefix_hit_tokens.set(static_cast<double>(cache->stats().hit_tokens));
        metrics_.prefix_evictions.set(static_cast<double>(cache->stats().evictions));
        metrics_.prefix_blocks.set(cache->size());
    }
    const PipelineStats pipeline = batch_.pipeline();
    metrics_.pipeline_steps.set(static_cast<double>(pipeline.steps));
    metrics_.pipeline_overlapped_steps.set(static_cast<double>(pipeline.overlapped));
    metrics_.pipeline_max_in_flight.set(pipeline.max_in_flight);
    const std::lock_guard lock(mutex_);
    metrics_.queued_requests.set(static_cast<double>(queue_.size()));
}

}  // namespace vkf::server
