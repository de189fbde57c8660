#pragma once
// The device half of a decoder step (issue 41): runs the StepSchedule a Scheduler chose
// (host/sched/step_schedule.hpp) on one Model's layers. It owns the paged KV cache, the
// small host-visible per-step buffers (ids, positions, slots, the sequence table attention
// reads, the rows whose logits are wanted), the activations, and the steps' command lists,
// recorded once per StepShape from its DecoderPlan (host/model/decoder_plan.hpp) and
// submitted again for every later step of that shape. run() copies the schedule's blocks,
// writes those buffers, submits, and returns the logits of the rows asked for, or, on a
// stage of a layer split without the head, the hidden rows the next stage starts from.
//
// It knows nothing of sequences beyond one schedule: which blocks are free, who holds them
// and when rows count as computed are the Scheduler's, which takes run()'s outcome back
// (Scheduler::complete). Batch (host/model/batch.hpp) is the two together.

#include "host/model/decoder_step.hpp"
#include "host/model/kv_cache.hpp"
#include "host/model/model.hpp"
#include "host/sched/step_schedule.hpp"
#include "runtime/pipeline_preparation.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace vkf {

// GPU time per op kind (the dispatch labels), summed over profiled submissions.
struct OpProfile {
    double ms = 0.0;
    std::uint64_t dispatches = 0;
};
using Profile = std::map<std::string, OpProfile>;

// What the submissions did.
struct SessionStats {
    std::uint64_t submissions = 0;
    std::uint64_t recordings = 0;    // command lists recorded (the rest were re-submitted)
    std::uint64_t dispatches = 0;    // over all submissions
    std::uint64_t barriers = 0;      // hazard barriers, over all submissions
    std::uint64_t tokens = 0;        // run through the layers
    double gpu_ms = 0.0;             // GPU time of the submissions (timestamps), 0 without
    double wall_ms = 0.0;            // host wall time of the steps, submission waits included
    std::uint64_t block_copies = 0;  // KV blocks copied on write
    // A stage of a layer split: wall time of its hidden rows' upload before each step and
    // download after it (the hand-off between stages, host side).
    double hand_off_ms = 0.0;
};

struct ExecutorOptions {
    DecoderSettings decoder;           // what decides the plans; its block_size and blocks_per_seq too
    std::uint32_t blocks = 0;          // the KV pool, in blocks
    std::uint32_t max_rows = 0;        // most rows one step runs
    std::uint32_t max_sequences = 16;  // most sequences one step runs
    bool profiling = false;            // time every dispatch into profile()
    // Submit recorded steps again; false records every step anew, as a check.
    bool reuse_steps = true;
    // Tests: NaN in every KV block at the start and in the logits before every step, so that
    // a row read before it was written, or a logit row never written, shows.
    bool poison = false;
};

struct StepOutput {
    // [schedule.logit_rows.size(), vocab] fp32, in that order; empty on a stage without the head.
    std::vector<float> logits;
    // A stage without the head: [rows, hidden] fp32 after its layers, in row order; else empty.
    std::vector<float> hidden;
    StepOutcome outcome;  // for Scheduler::complete
};

// Not thread-safe: one thread runs and prepares.
class StepExecutor {
public:
    // Allocates the cache and the buffers and plans a one-row step: a device the model cannot
    // run on fails here, not mid-run. Throws vkf::Error for options it cannot hold (no
    // blocks, rows or sequences, a block table shorter than one block).
    StepExecutor(const Model& model, const ExecutorOptions& options);
    StepExecutor(const StepExecutor&) = delete;
    StepExecutor& operator=(const StepExecutor&) = delete;

    // Runs a nonempty schedule: its block copies, then the step. `hidden_in`: on a stage
    // without the embedding, the rows the stage before computed, [rows, hidden] fp32; empty
    // on the first. Throws vkf::Error, before anything is submitted, for a schedule it cannot
    // run: no rows, more rows or sequences than it holds, per-row lists of different lengths,
    // ids past the vocabulary, slots or blocks past the pool, sequences whose rows do not
    // tile the step, logit rows that do not match the sequences' counts, or hidden rows of
    // the wrong size.
    StepOutput run(const StepSchedule& schedule, std::span<const float> hidden_in = {});
    // The shape a schedule runs as here (a stage without the head asks for no logits).
    StepShape shape(const StepSchedule& schedule) const;
    // Records the steps of these shapes now, their pipelines made in parallel and run once
    // (runtime/pipeline_preparation.hpp), so that the first step of each shape only runs.
    // Shapes recorded already cost nothing; a stage without the head drops their logit rows.
    PreparationStats prepare(std::span<const StepShape> shapes);
    // The KV bytes of these blocks as stored, and their inverse (KvCache::read_blocks): a
    // saved sequence's state.
    std::vector<std::byte> read_kv(std::span<const std::uint32_t> blocks) { return cache_.read_blocks(ctx_, blocks); }
    void write_kv(std::span<const std::uint32_t> blocks, std::span<const std::byte> bytes) {
        cache_.write_blocks(ctx_, blocks, bytes);
    }
    // The plan of a step recorded for this shape (its matmul and attention kernels), or null.
    const DecoderPlan* plan(const StepShape& shape) const;

    const Model& model() const { return model_; }
    const KvCache& cache() const { return cache_; }
    const ExecutorOptions& options() const { return options_; }
    const SessionStats& stats() const { return stats_; }
    const Profile& profile() const { return profile_; }
    // Whether the steps scatter QKV in place (DecoderPlan::scatter; the same for every shape).
    bool fused_qkv() const { return fused_qkv_; }
    std::uint64_t device_bytes() const;

private:
    struct Step {
        DecoderPlan plan;
        std::unique_ptr<RecordedStep> recorded;
    };
    void ensure_buffers(const DecoderPlan& plan);
    DecoderPlan checked_plan(const StepShape& shape) const;
    // The step of this shape, recorded if needed; `finish` false leaves a new list open.
    RecordedStep& recorded(const StepShape& shape, bool finish = true);
    void check(const StepSchedule& schedule, std::span<const float> hidden_in) const;
    void copy_blocks(const std::vector<BlockCopy>& copies);
    void read_timings(const CommandList& list, StepOutcome& outcome);

    const Model& model_;
    Context& ctx_;
    ExecutorOptions options_;
    KvCache cache_;
    // Per-step inputs (host-visible) and activations, sized for max_rows rows.
    Buffer ids_, positions_, slots_, sequence_table_, logit_index_;
    Buffer hidden_, normed_, qkv_, q_, attn_, mlp_, gate_, logit_hidden_, logits_, scratch_;
    StepBuffers buffers_;
    std::map<StepShape, Step> steps_;
    bool fused_qkv_ = false;
    SessionStats stats_;
    Profile profile_;
};

}  // namespace vkf
