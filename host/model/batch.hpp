#pragma once
// Many sequences through one decoder at once (continuous batching). Sequences are added, fed
// tokens (a prompt, a chunk of one, or the token sampled last) and removed at any time,
// independently; step() runs one forward pass over the pending tokens of as many sequences
// as fit, any mix of prefill chunks and single decode tokens, so the weights are read once
// for all of them. Their keys and values live in a paged KV cache (host/model/kv_cache.hpp)
// shared by all: a sequence holds a table of fixed-size blocks that grows a block at a time
// and is freed when it is removed. A sequence fed a prompt that starts with tokens another
// sequence already computed takes that sequence's blocks for them (copy on write at the first
// block it writes into), so a common system prompt is computed and stored once.
//
// Batch is two parts: which rows a step runs and where their keys go is the Scheduler's
// (host/sched/scheduler.hpp, no Vulkan): decode tokens first, then prompt chunks, up to the
// step's row and sequence budget. Its StepSchedule runs on a StepExecutor
// (host/model/step_executor.hpp), which copies the blocks the schedule says, writes the small
// per-step buffers and submits the step's command list, recorded once per StepShape
// (host/model/decoder_plan.hpp); the outcome goes back to the Scheduler, and each sequence
// gets its rows of the logits. docs/DESIGN.md "One decode step" follows it through.

#include "host/model/batch_front.hpp"
#include "host/model/model.hpp"
#include "host/model/sequence_state_fwd.hpp"
#include "host/model/step_executor.hpp"
#include "host/sched/scheduler.hpp"
#include "runtime/pipeline_preparation.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace vkf {

struct BatchOptions {
    // KV-cache capacity over all sequences, in tokens (rounded up to whole blocks).
    std::uint32_t max_tokens = 0;
    // Most tokens one sequence holds (its block table's length); 0: max_tokens.
    std::uint32_t max_sequence_tokens = 0;
    std::uint32_t max_sequences = 16;  // most sequences one step runs
    std::uint32_t block_size = 16;     // tokens per KV block
    // Most rows one step runs, all sequences together: bounds one submission's time.
    std::uint32_t chunk = 128;
    // GPUs: milliseconds one submission with prompt rows should take at most (watchdogs reset
    // GPUs whose work runs for about 2 s); later steps take as many prompt rows as the
    // measured time per row allows (prompt_chunk_after). 0, and CPU devices: always `chunk`.
    std::uint32_t submission_target_ms = 500;
    bool profiling = false;  // time every dispatch into profile()
    // The QKV projection scatters Q, K and V in place where the device and the family allow
    // (DecoderPlan::scatter); off: separate repack and append passes.
    bool fuse_qkv = true;
    // LayerNorms run inside the matmuls that read them where the matmul op says it pays.
    bool fuse_layernorm = true;
    // Submit recorded steps again; false records every step anew, as a check.
    bool reuse_steps = true;
    DType kv_dtype = DType::F16;                 // F16 or F32
    QuantFormat kv_k_quant = QuantFormat::None;  // SessionOptions::kv_k_quant
    QuantFormat kv_v_quant = QuantFormat::None;
    // Quantized weights: X rounded to int8 per block for the integer dot products.
    bool int8_activations = false;
    // Key window (AttentionParams::window; 0: full attention). With one, a sequence's block
    // table is a ring of window_ring_blocks() blocks: blocks no query can see any more go
    // back to the pool, positions count on, and a sequence has no length limit (but the
    // model's learned positions, if any); max_sequence_tokens then bounds nothing.
    std::uint32_t window = 0;
    // A sequence's first tokens take another sequence's computed blocks where they match.
    bool share_prefixes = true;
    // A removed sequence's full blocks stay cached until the pool needs them, and a later
    // prompt starting with the same tokens takes them (host/sched/prefix_cache.hpp). Not with
    // a window.
    bool cache_prefixes = false;
    // Tests: NaN in every KV block at the start and in the logits before every step, so that
    // a row read before it was written, or a logit row never written, shows.
    bool poison = false;
};

// What a Batch with these options holds beside the weights, for the memory estimate
// (estimate_session_memory) and Model's check of it: its whole pool of KV blocks and a
// sequence table of max_sequences block tables. Throws vkf::Error as Batch's constructor does
// for options it refuses.
SessionSize batch_session_size(const ModelConfig& config, const BatchOptions& options);

struct SequenceOutput {
    SequenceId id = 0;
    std::uint32_t tokens = 0;    // rows this step ran
    std::uint32_t position = 0;  // the sequence's tokens in the cache after the step
    bool done = false;           // none of its fed tokens is left
    std::vector<float> logits;   // [rows, vocab]: the step's rows whose logits were asked for
};

struct StepResult {
    std::vector<SequenceOutput> ran;
    // A stage of a layer split without the head: the hidden rows after its layers, [rows of
    // the step, hidden] fp32 in `ran` order, what the next stage's step(schedule, hidden)
    // takes (its outputs' logits are empty). Empty for the last stage.
    std::vector<float> hidden;
    std::vector<SequenceId> blocked;   // pending tokens, but no free KV block: free some (remove)
    std::vector<SequenceId> deferred;  // pending tokens, but the step was full: the next step
};

// Not thread-safe: one thread adds, feeds, removes and steps (a server's engine thread).
//
// Over a stage of a layer split (Model::layers()): every stage's Batch is given the same
// add, feed and remove calls in the same order, so that sequence ids, positions and KV blocks
// agree; the first stage schedules with step(), each later one runs exactly the rows the one
// before ran with step(schedule, hidden). Only the first stage reads the ids' values (and
// the prefix sharing that compares them, which therefore agrees as well).
class Batch : public BatchFront {
public:
    Batch(const Model& model, BatchOptions options);
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

    SequenceId add(std::uint64_t cache_salt = 0) override { return scheduler_.add(cache_salt); }
    // Queues `ids` after the sequence's tokens; `logits` says whose logits step() returns.
    // Throws vkf::Error for an unknown sequence, no ids, ids >= vocab_size, or more tokens
    // than max_sequence_tokens (nothing is queued then).
    void feed(SequenceId id, std::span<const std::uint32_t> ids, Logits logits = Logits::Last) override {
        scheduler_.feed(id, ids, logits);
    }
    // Ends a sequence (pending tokens dropped) and frees the blocks no other sequence holds.
    void remove(SequenceId id) override { scheduler_.remove(id); }
    // A sequence's saved state (host/model/sequence_state.hpp: its tokens, chunks and KV bytes
    // as stored), `tokenizer_crc` going into its fingerprint. Throws vkf::Error for a sequence
    // with tokens not run yet or none, or on a stage of a layer split (it holds some layers).
    SequenceState save_state(SequenceId id, std::uint32_t tokenizer_crc);
    // The fingerprint of its states: the model, the cache's format, the tokenizer's hash.
    StateFingerprint state_fingerprint(std::uint32_t tokenizer_crc) const;
    // Restores a state (parse_state checked it against this batch's fingerprint) into `id`, a
    // sequence fed nothing yet: its blocks are taken from the pool and written. Throws
    // vkf::Error as Scheduler::restore does (then remove the sequence), or for a layer split.
    void restore_state(SequenceId id, const SequenceState& state);
    // One forward pass over pending tokens; a step with nothing to run submits nothing.
    // Throws vkf::Error on a later stage of a layer split (it does not schedule).
    StepResult step() override;
    // A later stage of a layer split: runs the rows `schedule`
    // names, whose hidden rows the stage before computed, `hidden_in` [sum of rows, hidden]
    // fp32 in schedule order. Throws vkf::Error on the first stage, for a shape mismatch, an
    // unknown sequence, rows it has not pending, or more rows than a step holds.
    StepResult step(std::span<const StageRows> schedule, std::span<const float> hidden_in);
    // Records the steps of these shapes now (StepExecutor::prepare): time to first token
    // without the driver's compiles. A stage without the head records them without logit rows.
    PreparationStats prepare(std::span<const StepShape> shapes) { return executor_.prepare(shapes); }
    // The shapes one sequence's steps take: a prompt of `prompt_tokens` tokens (its last
    // token's logits wanted) alone in the batch, then its decoding steps. On GPUs the prompt's
    // later chunks follow the measured time (BatchOptions::submission_target_ms): the first is
    // exact, the rest what the chunk limit is now.
    std::vector<StepShape> sequence_shapes(std::uint32_t prompt_tokens) const;

    bool contains(SequenceId id) const override { return scheduler_.contains(id); }
    bool has_pending() const { return scheduler_.has_pending(); }
    // Tokens whose keys are in the cache. Throws vkf::Error for an unknown sequence, as do
    // the other queries of one sequence.
    std::uint32_t position(SequenceId id) const { return scheduler_.position(id); }
    std::uint32_t pending(SequenceId id) const { return scheduler_.pending(id); }  // fed tokens not run yet
    // Tokens whose blocks came from another sequence (prefix sharing) or the prefix cache.
    std::uint32_t shared_prefix(SequenceId id) const override { return scheduler_.shared_prefix(id); }
    // The key count after each step that ran the sequence (a reference run in the same chunks
    // gives the same numerics even under Jais' length-dependent ALiBi scaling).
    const std::vector<std::uint32_t>& chunk_ends(SequenceId id) const override { return scheduler_.chunk_ends(id); }
    std::vector<SequenceId> sequences() const { return scheduler_.sequences(); }
    std::size_t size() const { return scheduler_.size(); }

    const KvBlocks& blocks() const override { return scheduler_.blocks(); }
    // The prefix cache (BatchOptions::cache_prefixes), or nullptr.
    const PrefixCache* prefix_cache() const override { return scheduler_.prefix_cache(); }
    std::uint32_t block_size() const { return options_.block_size; }
    std::uint32_t max_sequence_tokens() const override { return options_.max_sequence_tokens; }
    std::uint32_t window() const override { return options_.window; }
    // Blocks the sequence holds now (a windowed one holds at most blocks_per_seq()).
    std::uint32_t blocks_held(SequenceId id) const { return scheduler_.blocks_held(id); }
    std::uint32_t blocks_per_seq() const { return executor_.options().decoder.blocks_per_seq; }
    const BatchOptions& options() const { return options_; }
    const Model& model() const { return model_; }
    const SessionStats& stats() const { return executor_.stats(); }
    const Profile& profile() const { return executor_.profile(); }
    // Whether the steps scatter QKV in place (DecoderPlan::scatter; the same for every shape).
    bool fused_qkv() const { return executor_.fused_qkv(); }
    std::uint64_t device_bytes() const { return executor_.device_bytes(); }
    const StepExecutor& executor() const { return executor_; }

private:
    // Runs the schedule on the executor and hands its outcome back to the scheduler.
    // `hidden_in`: a later stage's input rows (empty on the first stage).
    void run(const StepSchedule& schedule, StepResult& result, std::span<const float> hidden_in = {});

    const Model& model_;
    BatchOptions options_;
    Scheduler scheduler_;
    StepExecutor executor_;
};

}  // namespace vkf
