#pragma once
// The pipelining policy of a front over a layer split (issue 31), in one place for both:
// RankZeroBatch (host/dist/batch_pipeline.hpp: stages on MPI ranks) and SplitBatch
// (host/model/split_batch.hpp: stages on Contexts of this process, a worker thread each).
// The owner keeps the transport (StepPipeline::Transport): how a step stage 0 ran goes
// downstream, and how the last stage's logits come back. PipelinedFront is the BatchFront
// side both share: what callers read comes from stage 0's Batch, steps from a StepPipeline.
//
// A sequence whose step is in flight has no pending tokens (its next token is sampled from
// that step's logits), so step() runs stage 0 over the other sequences while later stages run
// the steps before. step() starts a step while fewer than `limit` are in flight and sequences
// are pending, and returns nothing while others can still start; otherwise it waits for the
// oldest step's logits and returns its outputs, less those of the sequences removed while it
// was in flight (the owner's transport keeps calls and steps in order on every stage, so they
// are removed downstream after that step ran there).

#include "host/model/batch.hpp"
#include "host/model/batch_front.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>

namespace vkf {

class StepPipeline {
public:
    class Transport {
    public:
        // Hands the step stage 0 just ran to the next stage: its rows (`started.ran`) and
        // hidden rows (`started.hidden`, which the transport may move from).
        virtual void hand_off(StepResult& started) = 0;
        // Waits for the logits of the oldest step handed off and not received yet, and puts
        // each output's rows in `oldest.ran[i].logits`. Throws vkf::Error when they do not
        // match the rows stage 0 ran.
        virtual void receive_logits(StepResult& oldest) = 0;

    protected:
        ~Transport() = default;
    };

    // `first`: stage 0's Batch, which step() runs and which says what is still there.
    // `limit`: the most steps in flight (at least 1).
    StepPipeline(Batch& first, Transport& transport, std::uint32_t limit);

    // BatchFront::step's policy (see above).
    StepResult step();
    // Waits for the oldest step in flight (there must be one): its outputs, less the
    // sequences removed since it started.
    StepResult finish_oldest();

    std::size_t in_flight() const { return started_.size(); }
    const PipelineStats& stats() const { return stats_; }

private:
    Batch& first_;
    Transport& transport_;
    std::uint32_t limit_;
    std::deque<StepResult> started_;  // stage 0's results of the steps in flight, hidden dropped
    PipelineStats stats_;
};

// A BatchFront over a layer split whose stage 0 runs on the caller's thread: the owner
// implements add, feed, remove and step (its transport's checks, then pipeline_.step()) and
// the transport; the rest is stage 0's Batch's, which holds every sequence the front does.
class PipelinedFront : public BatchFront, protected StepPipeline::Transport {
public:
    PipelinedFront(const PipelinedFront&) = delete;
    PipelinedFront& operator=(const PipelinedFront&) = delete;

    bool contains(SequenceId id) const override { return first_.contains(id); }
    const std::vector<std::uint32_t>& chunk_ends(SequenceId id) const override { return first_.chunk_ends(id); }
    std::uint32_t shared_prefix(SequenceId id) const override { return first_.shared_prefix(id); }
    const KvBlocks& blocks() const override { return first_.blocks(); }
    const PrefixCache* prefix_cache() const override { return first_.prefix_cache(); }
    std::uint32_t max_sequence_tokens() const override { return first_.max_sequence_tokens(); }
    std::uint32_t window() const override { return first_.window(); }
    PipelineStats pipeline() const override { return pipeline_.stats(); }

protected:
    // `first`: stage 0's Batch; `limit`: the most steps in flight (StepPipeline).
    PipelinedFront(Batch& first, std::uint32_t limit) : first_(first), pipeline_(first, *this, limit) {}
    ~PipelinedFront() override = default;

    Batch& first_;
    StepPipeline pipeline_;
};

}  // namespace vkf
