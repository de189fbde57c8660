#pragma once
// Many sequences over a layer split on MPI ranks (issue 31), pipelined.
//
// Rank 0's RankZeroBatch is the BatchFront BatchGenerator and vkf-server's engine drive. Its
// add, feed and remove run on rank 0's stage Batch and are sent (Tag::Command) to every other
// rank, whose serve_batch_stage() makes the same calls on its stage Batch in the same order:
// sequence ids, positions and KV blocks agree (host/model/batch.hpp). step() runs stage 0 over
// the sequences with pending tokens and sends the step's schedule and hidden rows to rank 1;
// rank r runs exactly those rows and passes them on; the last rank sends the logits back.
//
// The pipeline (its policy is StepPipeline's, host/model/step_pipeline.hpp, shared with the
// in-process SplitBatch): step() does not wait for a step's logits while other sequences can
// run. A sequence whose step is in flight has no pending tokens (its next token is sampled
// from those logits), so the next step() runs stage 0 over the other sequences while rank 1
// runs the step before: with R ranks, rank r runs step k while rank r + 1 runs step k - 1.
// step() returns an earlier step's outputs once at most `in_flight` steps are out, or once
// nothing else can run, blocking on the oldest; otherwise it returns nothing ran. Commands and
// the steps' messages keep their order on every rank, so a sequence removed while its step is
// in flight is removed on each rank after that step ran there; its late logits are dropped.

#include "host/dist/channel.hpp"
#include "host/model/batch.hpp"
#include "host/model/step_pipeline.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace vkf::dist {

// What moving activations between ranks cost, seen from rank 0 (vkf-run --json's "split",
// vkf-bench's split suite).
struct RankSplitStats {
    std::uint64_t steps = 0;
    std::uint64_t messages = 0;        // commands, schedules, hidden rows and logits
    std::uint64_t transfer_bytes = 0;  // the hidden rows rank 0 sent and the logits it received
    double transfer_ms = 0.0;          // rank 0's wall time in sends until MPI took the bytes
    // Rank 0's wall time waiting for a step's logits: the later ranks' layers and every
    // hand-off, less what stage 0 overlapped with them.
    double downstream_ms = 0.0;
};

class RankZeroBatch : public PipelinedFront {
public:
    // `stage`: rank 0's Batch (layers from 0), made with the options every rank uses.
    // `in_flight`: the most steps sent downstream and not answered yet (0: the ranks' count).
    RankZeroBatch(Channel& channel, Batch& stage, std::uint32_t in_flight = 0);

    SequenceId add(std::uint64_t cache_salt = 0) override;
    void feed(SequenceId id, std::span<const std::uint32_t> ids, Logits logits = Logits::Last) override;
    void remove(SequenceId id) override;
    StepResult step() override;
    const RankSplitStats& traffic() const { return traffic_; }

    // Tells every other rank the run is over (they return from serve_batch_stage()).
    void stop();

private:
    void command(const std::vector<std::uint32_t>& words);
    // StepPipeline::Transport: a step's schedule and hidden rows go to rank 1, its logits
    // come from the last rank.
    void hand_off(StepResult& started) override;
    void receive_logits(StepResult& oldest) override;

    Channel& channel_;
    RankSplitStats traffic_;
};

// Rank r > 0: mirrors rank 0's RankZeroBatch on this rank's stage Batch until rank 0 stops
// it. `before_step`, when given, is called with the step's number (from 0) before each step.
void serve_batch_stage(Channel& channel, Batch& stage, const std::function<void(std::uint64_t)>& before_step = {});

}  // namespace vkf::dist
