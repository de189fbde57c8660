#pragma once
// The multi-sequence interface BatchGenerator and vkf-server's engine drive: a Batch on one
// device implements it, and so do the pipelined fronts of a layer split (rank 0's over MPI
// ranks, host/dist/batch_pipeline.hpp; SplitBatch over this process's devices,
// host/model/split_batch.hpp), which mirror every call on every stage's Batch and pipeline the
// steps (host/model/step_pipeline.hpp). Only what those callers use is here.

#include "host/sched/kv_blocks.hpp"
#include "host/sched/prefix_cache.hpp"
#include "host/sched/step_schedule.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace vkf {

// SequenceId and Logits: host/sched/step_schedule.hpp.
struct StepResult;

// How a pipelined front overlapped its stages' steps (zeros for a one-device Batch).
struct PipelineStats {
    std::uint64_t steps = 0;          // steps stage 0 started
    std::uint64_t overlapped = 0;     // of them, started while an earlier step was in flight
    std::uint32_t max_in_flight = 0;  // most steps in flight at once
};

class BatchFront {
public:
    virtual ~BatchFront() = default;

    // `cache_salt`: prefixes are shared and cached only among sequences of the same salt
    // (Scheduler::add); a split front gives it to every stage, so that all stages agree.
    virtual SequenceId add(std::uint64_t cache_salt = 0) = 0;
    virtual void feed(SequenceId id, std::span<const std::uint32_t> ids, Logits logits = Logits::Last) = 0;
    virtual void remove(SequenceId id) = 0;
    // One step. A pipelined front may return the outputs of an earlier step, or none while its
    // steps are in flight; a sequence whose step is in flight has no pending tokens until its
    // output is returned (its next token is not sampled yet).
    virtual StepResult step() = 0;
    virtual bool contains(SequenceId id) const = 0;
    virtual const std::vector<std::uint32_t>& chunk_ends(SequenceId id) const = 0;
    // Of the tokens fed first, those whose blocks came from another sequence or the prefix
    // cache (Scheduler::shared_prefix): a prompt's cached tokens.
    virtual std::uint32_t shared_prefix(SequenceId id) const = 0;
    virtual const KvBlocks& blocks() const = 0;
    // The prefix cache (BatchOptions::cache_prefixes; stage 0's on a split), or nullptr.
    virtual const PrefixCache* prefix_cache() const = 0;
    virtual std::uint32_t max_sequence_tokens() const = 0;
    virtual std::uint32_t window() const = 0;
    virtual PipelineStats pipeline() const { return {}; }
};

}  // namespace vkf
