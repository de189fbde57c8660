#pragma once
// A layer split over MPI ranks (issue 31): rank r runs stage r (host/model/layer_range.hpp)
// on its own device, with its own Batch and KV cache for its layers.
//
// Rank 0 drives: RankZeroSession is the SequenceModel generate() runs over. Its forward()
// tells every other rank to feed the same ids (Tag::Command), then, step by step, tells them
// to step, runs stage 0's Batch (the embedding and its layers), and sends the step's schedule
// and hidden rows to rank 1; rank r runs exactly those rows (Batch::step(schedule, hidden))
// and passes its hidden rows to rank r + 1; the last rank sends the logits rank 0 asked for
// back to rank 0, which samples. Ranks > 0 run serve_stage(), which mirrors rank 0's feeds,
// steps and resets until rank 0 says stop. Every stage's Batch thus sees the same calls in the
// same order, so sequence ids, positions and KV blocks agree (host/model/batch.hpp).
//
// Every wait goes through the Channel: a rank that dies or stalls ends every rank's run with
// RankFailure naming it (host/dist/channel.hpp).

#include "host/dist/channel.hpp"
#include "host/model/sequence_model.hpp"
#include "host/model/session.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace vkf::dist {

// What moving activations between ranks cost, seen from rank 0.
struct RankSplitStats {
    std::uint64_t steps = 0;
    std::uint64_t messages = 0;        // commands, schedules, hidden rows and logits
    std::uint64_t transfer_bytes = 0;  // the hidden rows rank 0 sent and the logits it received
    double transfer_ms = 0.0;          // rank 0's wall time in sends until MPI took the bytes
    // From stage 0's step to the logits back: the later ranks' layers and every hand-off.
    double downstream_ms = 0.0;
};

class RankZeroSession : public SequenceModel {
public:
    // `stage`: rank 0's model (layers from 0); `options` the same on every rank.
    RankZeroSession(Channel& channel, const Model& stage, SessionOptions options);
    RankZeroSession(const RankZeroSession&) = delete;
    RankZeroSession& operator=(const RankZeroSession&) = delete;

    std::vector<float> forward(std::span<const std::uint32_t> ids, Logits which = Logits::Last,
                               const ChunkProgress& on_chunk = {}) override;
    std::uint32_t position() const override { return batch_.position(sequence_); }
    std::uint32_t max_tokens() const override { return options_.max_tokens; }
    std::uint32_t window() const override { return options_.window; }
    void reset() override;
    const std::vector<std::uint32_t>& chunk_ends() const override { return batch_.chunk_ends(sequence_); }
    const ModelConfig& config() const override { return batch_.model().config(); }

    // Stage 0's pipelines for a prompt of this length (the other ranks prepare their own).
    PreparationStats prepare(std::uint32_t prompt_tokens);
    // Tells every other rank the run is over; they return from serve_stage().
    void stop();
    const RankSplitStats& split_stats() const { return stats_; }

private:
    void command(const std::vector<std::uint32_t>& words);

    Channel& channel_;
    SessionOptions options_;
    Batch batch_;
    SequenceId sequence_ = 0;
    RankSplitStats stats_;
};

// Rank r > 0: mirrors rank 0's session on this rank's stage until rank 0 stops it.
// `prompt_tokens`: the prompt's length, whose steps' pipelines are made first. `before_step`,
// when given, is called with the step's number (from 0) before each step (tests' faults).
void serve_stage(Channel& channel, const Model& stage, SessionOptions options, std::uint32_t prompt_tokens,
                 const std::function<void(std::uint64_t)>& before_step = {});

}  // namespace vkf::dist
