#pragma once
// Many sequences over a model split by layers on several devices of this process (issue 31),
// pipelined: the in-process counterpart of rank 0's RankZeroBatch over MPI ranks
// (host/dist/batch_pipeline.hpp), and the same BatchFront, so BatchGenerator, vkf-run
// --devices --parallel and vkf-server --devices drive it as they drive one Batch.
//
// Every stage has its own Batch (on its own Context). add, feed and remove run on stage 0's
// Batch at once and are queued, in the order they were made, for every later stage, so that
// sequence ids, positions and KV blocks agree (host/model/batch.hpp). step() runs stage 0
// over the sequences with pending tokens on the caller's thread and hands the step's
// schedule and hidden rows to stage 1; each later stage runs on a worker thread of its own,
// runs exactly those rows and hands them on; the last stage's logits come back to step().
//
// The pipeline (its policy is StepPipeline's, host/model/step_pipeline.hpp, shared with
// RankZeroBatch): a sequence whose step is in flight has no pending tokens (its next token is
// sampled from that step's logits), so the next step() runs stage 0 over the other sequences
// while stage 1 runs the step before: with S stages, stage s runs step k while stage s + 1
// runs step k - 1. step() returns an earlier step's outputs once `in_flight` steps are out,
// or once nothing else can run, blocking on the oldest; otherwise it returns that nothing
// ran yet. A stage runs its queued calls in order, so a sequence removed while its step is in
// flight is removed on each stage after that step ran there; its late logits are dropped.
//
// Errors: what a worker throws ends the pipeline; the next step() (or add or feed) rethrows
// it, the same vkf::Error, on the caller's thread. The destructor stops the workers after the
// step each is running, if any, and joins them; steps still queued are dropped.

#include "host/model/batch.hpp"
#include "host/model/split_model.hpp"
#include "host/model/step_pipeline.hpp"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

namespace vkf {

class SplitBatch : public PipelinedFront {
public:
    // `stages`: one Batch per stage, in layer order (check_stages), each on its own Context,
    // made with the same BatchOptions and given no calls yet; they must outlive this, and
    // from now on only this uses them. `in_flight`: the most steps out at once (0: the
    // stages' count). Throws vkf::Error for fewer than two stages or stages that do not
    // form one model.
    explicit SplitBatch(std::span<Batch* const> stages, std::uint32_t in_flight = 0);
    ~SplitBatch() override;

    SequenceId add(std::uint64_t cache_salt = 0) override;
    void feed(SequenceId id, std::span<const std::uint32_t> ids, Logits logits = Logits::Last) override;
    void remove(SequenceId id) override;
    StepResult step() override;

    std::size_t stage_count() const { return stages_.size(); }
    // Steps out: started on stage 0, their logits not returned yet.
    std::size_t in_flight() const { return pipeline_.in_flight(); }
    // The hand-offs between stages so far (transfer_ms sums the
    // stages' SessionStats::hand_off_ms, stage_ms their steps' wall time).
    SplitStats split_stats() const;
    // Wall time each stage spent in its steps, in stage order: against the run's wall time,
    // how busy the pipeline kept every device.
    std::vector<double> stage_busy_ms() const;

private:
    enum class Kind { Add, Feed, Remove, Step };
    struct Call {
        Kind kind;
        SequenceId id = 0;
        std::uint64_t salt = 0;  // Add: the cache salt, the same on every stage
        std::vector<std::uint32_t> ids;
        Logits logits = Logits::Last;
    };
    struct HandOff {
        std::vector<StageRows> schedule;
        std::vector<float> hidden;
    };
    // A later stage: its calls in order, and the hand-offs its steps take, in order.
    struct Worker {
        Batch* batch = nullptr;
        std::deque<Call> calls;
        std::deque<HandOff> inbox;
        double busy_ms = 0.0;
        double hand_off_ms = 0.0;
        std::thread thread;
    };

    void work(std::size_t stage);
    void queue(const Call& call);
    void stop_workers();
    // Throws the error a worker stopped on (under mutex_).
    void check_locked() const;
    void check() const;
    // StepPipeline::Transport: a step's schedule and hidden rows go to stage 1's worker, its
    // logits come from the last stage's.
    void hand_off(StepResult& started) override;
    void receive_logits(StepResult& oldest) override;

    std::vector<Batch*> stages_;
    SplitStats moved_;

    // What the workers share with the caller's thread; one lock, one condition for all.
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<std::unique_ptr<Worker>> workers_;  // stage s at s - 1
    std::deque<StepResult> finished_;               // the last stage's results
    std::exception_ptr error_;
    bool stopping_ = false;
};

}  // namespace vkf
