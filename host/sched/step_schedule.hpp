#pragma once
// One step as the Scheduler (host/sched/scheduler.hpp) chose it, in plain numbers: what the
// StepExecutor (host/model/step_executor.hpp) uploads before it submits the step's recorded
// command list, and the block copies it does first. The executor hands the step's outcome
// back (Scheduler::complete), which is when the sequences' tokens count as computed; the
// split between the two is vLLM's schedule() / update_from_output(). No Vulkan: the
// scheduling policy is tested on the host (tests/sched/test_scheduler.cpp).

#include <cstdint>
#include <optional>
#include <vector>

namespace vkf {

using SequenceId = std::uint64_t;
// Which fed tokens' logits a step returns. All: every fed row that runs (a prompt's rows that a
// shared prefix covers do not run, and return none); Every: every fed row, so a fresh sequence
// fed with it shares no prefix (a prompt's logprobs).
enum class Logits { Last, All, None, Every };

// One sequence's rows in a step of a later stage of a layer split: the rows the stage before
// ran for it (its SequenceOutput::tokens), in the order it ran them.
struct StageRows {
    SequenceId id = 0;
    std::uint32_t rows = 0;
};

// Before the step: the keys and values of block `from` copied into block `to` (copy on
// write: the sequence that writes next into a shared block writes into its own copy).
struct BlockCopy {
    std::uint32_t from = 0;
    std::uint32_t to = 0;
    bool operator==(const BlockCopy&) const = default;
};

// A sequence in the step: its entry of the sequence table attention reads.
struct ScheduledSequence {
    SequenceId id = 0;
    std::uint32_t q_start = 0;     // its first row in the step
    std::uint32_t rows = 0;        // its rows, q_start ..
    std::uint32_t position = 0;    // its first row's position: tokens in the cache before the step
    std::uint32_t logit_rows = 0;  // of its rows, those in StepSchedule::logit_rows
    // Its block table: logical block b at blocks[b], or under a key window at
    // blocks[b % blocks.size()] (a ring; positions count on past it).
    std::vector<std::uint32_t> blocks;

    std::uint32_t kv_len() const { return position + rows; }
};

struct StepSchedule {
    std::vector<ScheduledSequence> sequences;  // in row order
    // Per row: the token, its position in its sequence, and the KV slot (block * block_size +
    // offset) its key and value are written to.
    std::vector<std::uint32_t> ids, positions, slots;
    std::vector<std::uint32_t> logit_rows;  // rows whose logits were asked for, ascending
    std::vector<BlockCopy> copies;          // done before the step, in order
    std::uint32_t max_q_len = 0;            // most rows of one sequence
    // Pending tokens, but no free KV block (free some: remove a sequence).
    std::vector<SequenceId> blocked;
    // Pending tokens, but the step was full (rows or sequences): the next step.
    std::vector<SequenceId> deferred;

    bool empty() const { return sequences.empty(); }
    std::uint32_t rows() const { return static_cast<std::uint32_t>(ids.size()); }
};

// What the executor measured running a step.
struct StepOutcome {
    // The step's GPU time, when the device timed it: later prompt chunks are sized from it.
    std::optional<double> gpu_ms;
};

// A sequence after a step ran it.
struct StepProgress {
    SequenceId id = 0;
    std::uint32_t rows = 0;      // rows the step ran
    std::uint32_t position = 0;  // the sequence's tokens in the cache after the step
    bool done = false;           // none of its fed tokens is left
};

}  // namespace vkf
