#include "host/model/split_batch.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace vkf {

namespace {

std::vector<StageRows> schedule_of(const StepResult& step) {
    std::vector<StageRows> rows;
    for (const SequenceOutput& out : step.ran) {
        rows.push_back({out.id, out.tokens});
    }
    return rows;
}

std::vector<const Model*> models_of(std::span<Batch* const> stages) {
    std::vector<const Model*> models;
    for (const Batch* b : stages) {
        if (b == nullptr) {
            throw Error("split batch: a stage's batch is missing");
        }
        models.push_back(&b->model());
    }
    return models;
}

Batch& first_of(std::span<Batch* const> stages) {
    if (stages.size() < 2) {
        throw Error("split batch: " + fmt::to_string(stages.size()) + " stage(s); a split has at least two");
    }
    check_stages(models_of(stages));
    return *stages.front();
}

}  // namespace

// Threads: stage 0's Batch is used by the caller's thread only, stage s's by its worker only
// (the caller queues its calls, never makes them), and a Model is read only once loaded, so
// no Batch or Model is used from two threads. A Context may be used from several threads
// (runtime/context.hpp), and each stage has its own, with its own queue and fences. What the
// threads share (the queues between them, the results, the error) is under mutex_.
SplitBatch::SplitBatch(std::span<Batch* const> stages, std::uint32_t in_flight)
    : PipelinedFront(first_of(stages), in_flight != 0 ? in_flight : static_cast<std::uint32_t>(stages.size())),
      stages_(stages.begin(), stages.end()) {
    for (const Batch* b : stages_) {
        if (b->size() != 0) {
            throw Error("split batch: a stage's batch holds sequences already; give every stage a new one");
        }
    }
    try {
        for (std::size_t s = 1; s < stages_.size(); ++s) {
            auto worker = std::make_unique<Worker>();
            worker->batch = stages_[s];
            workers_.push_back(std::move(worker));
        }
        for (std::size_t s = 1; s < stages_.size(); ++s) {
            workers_[s - 1]->thread = std::thread([this, s] { work(s); });
        }
    } catch (...) {
        stop_workers();
        throw;
    }
}

SplitBatch::~SplitBatch() {
    stop_workers();
}

void SplitBatch::stop_workers() {
    {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    changed_.notify_all();
    for (const auto& w : workers_) {
        if (w->thread.joinable()) {
            w->thread.join();
        }
    }
}

void SplitBatch::check_locked() const {
    if (error_) {
        std::rethrow_exception(error_);
    }
}

void SplitBatch::check() const {
    const std::lock_guard lock(mutex_);
    check_locked();
}

void SplitBatch::queue(const Call& call) {
    {
        const std::lock_guard lock(mutex_);
        for (const auto& w : workers_) {
            w->calls.push_back(call);
        }
    }
    changed_.notify_all();
}

void SplitBatch::work(std::size_t stage) {
    Worker& w = *workers_[stage - 1];
    const bool last = stage + 1 == stages_.size();
    // The next entry of one of this worker's queues, once there is one; none when the pipeline
    // stops or failed meanwhile.
    const auto take = [this](auto& queue) -> std::optional<std::decay_t<decltype(queue.front())>> {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stopping_ || error_ || !queue.empty(); });
        if (stopping_ || error_) {
            return std::nullopt;
        }
        auto next = std::move(queue.front());
        queue.pop_front();
        return next;
    };
    try {
        for (;;) {
            std::optional<Call> next_call = take(w.calls);
            if (!next_call) {
                return;
            }
            Call& call = *next_call;
            switch (call.kind) {
                case Kind::Add: {
                    const SequenceId mine = w.batch->add(call.salt);
                    if (mine != call.id) {
                        throw Error("split batch: stage 0 added sequence " + fmt::to_string(call.id) + ", stage " +
                                    fmt::to_string(stage) + " " + fmt::to_string(mine) + ": the stages disagree");
                    }
                    break;
                }
                case Kind::Feed:
                    w.batch->feed(call.id, call.ids, call.logits);
                    break;
                case Kind::Remove:
                    w.batch->remove(call.id);
                    break;
                case Kind::Step: {
                    std::optional<HandOff> next_in = take(w.inbox);
                    if (!next_in) {
                        return;
                    }
                    HandOff& in = *next_in;
                    const auto start = std::chrono::steady_clock::now();
                    StepResult out = w.batch->step(in.schedule, in.hidden);
                    const double ms =
                        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
                    {
                        const std::lock_guard lock(mutex_);
                        w.busy_ms += ms;
                        w.hand_off_ms = w.batch->stats().hand_off_ms;
                        if (last) {
                            out.hidden = {};
                            finished_.push_back(std::move(out));
                        } else {
                            HandOff next{schedule_of(out), std::move(out.hidden)};
                            workers_[stage]->inbox.push_back(std::move(next));
                        }
                    }
                    changed_.notify_all();
                    break;
                }
            }
        }
    } catch (...) {
        // Never past the thread: the caller's next step() throws it.
        {
            const std::lock_guard lock(mutex_);
            if (!error_) {
                error_ = std::current_exception();
            }
        }
        changed_.notify_all();
    }
}

SequenceId SplitBatch::add(std::uint64_t cache_salt) {
    check();
    const SequenceId id = first_.add(cache_salt);
    queue(Call{.kind = Kind::Add, .id = id, .salt = cache_salt});
    return id;
}

void SplitBatch::feed(SequenceId id, std::span<const std::uint32_t> ids, Logits logits) {
    check();
    // Stage 0 feeds first: what it refuses (unknown sequence, ids >= vocab_size, too many
    // tokens) is never queued for the others.
    first_.feed(id, ids, logits);
    queue(Call{
        .kind = Kind::Feed, .id = id, .ids = std::vector<std::uint32_t>(ids.begin(), ids.end()), .logits = logits});
}

void SplitBatch::remove(SequenceId id) {
    // Safe after a worker failed (BatchGenerator's cancel and destructor clean up then).
    first_.remove(id);
    queue(Call{.kind = Kind::Remove, .id = id});
}

StepResult SplitBatch::step() {
    check();
    return pipeline_.step();
}

void SplitBatch::hand_off(StepResult& started) {
    moved_.hand_offs += stages_.size() - 1;
    moved_.transfer_bytes += (stages_.size() - 1) * started.hidden.size() * sizeof(float);
    {
        const std::lock_guard lock(mutex_);
        for (const auto& w : workers_) {
            w->calls.push_back(Call{.kind = Kind::Step});
        }
        workers_.front()->inbox.push_back(HandOff{schedule_of(started), std::move(started.hidden)});
    }
    changed_.notify_all();
}

void SplitBatch::receive_logits(StepResult& oldest) {
    StepResult last;
    {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return error_ || !finished_.empty(); });
        check_locked();
        last = std::move(finished_.front());
        finished_.pop_front();
    }
    if (last.ran.size() != oldest.ran.size()) {
        throw Error("split batch: the last stage ran " + fmt::to_string(last.ran.size()) + " sequences, stage 0 " +
                    fmt::to_string(oldest.ran.size()));
    }
    for (std::size_t i = 0; i < oldest.ran.size(); ++i) {
        SequenceOutput& out = oldest.ran[i];
        if (last.ran[i].id != out.id || last.ran[i].tokens != out.tokens) {
            throw Error("split batch: the last stage ran other rows than stage 0 (sequence " + fmt::to_string(out.id) +
                        ")");
        }
        out.logits = std::move(last.ran[i].logits);
    }
}

SplitStats SplitBatch::split_stats() const {
    SplitStats s = moved_;
    s.transfer_ms = first_.stats().hand_off_ms;
    s.stage_ms = first_.stats().wall_ms;
    const std::lock_guard lock(mutex_);
    for (const auto& w : workers_) {
        s.transfer_ms += w->hand_off_ms;
        s.stage_ms += w->busy_ms;
    }
    return s;
}

std::vector<double> SplitBatch::stage_busy_ms() const {
    std::vector<double> busy{first_.stats().wall_ms};
    const std::lock_guard lock(mutex_);
    for (const auto& w : workers_) {
        busy.push_back(w->busy_ms);
    }
    return busy;
}

}  // namespace vkf
