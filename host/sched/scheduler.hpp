#pragma once
// Which tokens of which sequences one step of a decoder runs, and where their keys go: the
// policy of continuous batching over a paged KV cache, with no device in it (issue 41).
//
// Sequences are added, fed tokens (a prompt, a chunk of one, or the token sampled last) and
// removed at any time. schedule() picks a step's rows: decode tokens first (a user waits on
// each), then prompt chunks, each group in the order the sequences were added, up to the
// step's row and sequence budgets; it gives every row a KV slot in its sequence's block table
// (host/sched/block_table.hpp), growing the table a block at a time, and lists the sequences
// it could not run: blocked (no free block) or deferred (the step was full). A sequence fed a
// prompt that starts with tokens another sequence computed takes that sequence's blocks for
// them; the first write into a shared block goes into a copy, which the schedule lists. With
// cache_prefixes, the full blocks of a removed sequence stay in a PrefixCache
// (host/sched/prefix_cache.hpp) until the pool needs them, and a new prompt takes them too.
// complete() takes the step's outcome back: the rows count as computed, and on devices with
// a watchdog the next prompt chunk is sized from the step's measured time.
//
// Batch (host/model/batch.hpp) owns one and runs its schedules on a StepExecutor. Over a layer split every
// stage's Batch has one today: a later stage follows the rows the stage before ran (follow()),
// so that every stage's block tables agree with the first's. A StepSchedule is plain values,
// so one front's Scheduler can hand the same schedule to every stage's executor instead.

#include "host/sched/block_table.hpp"
#include "host/sched/kv_blocks.hpp"
#include "host/sched/prefix_cache.hpp"
#include "host/sched/step_schedule.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace vkf {

struct SchedulerOptions {
    std::uint32_t blocks = 0;          // the KV pool, in blocks
    std::uint32_t block_size = 16;     // tokens per block
    std::uint32_t table_blocks = 0;    // a sequence's table: its most blocks, or its ring's length
    std::uint32_t max_sequences = 16;  // most sequences one step runs
    std::uint32_t chunk = 128;         // most rows one step runs
    std::uint32_t window = 0;          // key window (0: full attention, no ring)
    std::uint64_t sequence_limit = 0;  // most tokens one sequence is fed
    std::uint32_t vocab_size = 0;      // fed ids must be below it
    bool share_prefixes = true;
    // Full blocks outlive their sequences until the pool needs them (no key window: a
    // windowed sequence gives its early blocks back as it goes).
    bool cache_prefixes = false;
    // Milliseconds a step with prompt rows should take at most (GPU watchdogs): the first
    // steps take min(chunk, 16) rows, later ones what the measured time per row allows
    // (prompt_chunk_after). 0: always `chunk`.
    std::uint32_t submission_target_ms = 0;
};

// Prompt tokens the next submission may take after one of `tokens` tokens took `gpu_ms`:
// what fits target_ms at that rate, a power of two, 1 .. max_chunk.
std::uint32_t prompt_chunk_after(double gpu_ms, std::uint32_t tokens, std::uint32_t target_ms, std::uint32_t max_chunk);

// Not thread-safe: one thread adds, feeds, removes, schedules and completes.
class Scheduler {
public:
    // Throws vkf::Error for options it cannot work with (no blocks, rows or sequences, a ring
    // shorter than a step's keys).
    explicit Scheduler(const SchedulerOptions& options);
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // A new sequence; ids count up from 1 and are never reused. Prefixes are shared and cached
    // only among sequences of the same `cache_salt` (a tenant's: others cannot time its prompts).
    SequenceId add(std::uint64_t cache_salt = 0);
    // Queues `ids` after the sequence's tokens; `logits` says whose logits a step returns.
    // Throws vkf::Error for an unknown sequence, no ids, ids >= vocab_size, or more tokens
    // than sequence_limit (nothing is queued then).
    void feed(SequenceId id, std::span<const std::uint32_t> ids, Logits logits = Logits::Last);
    // Ends a sequence (pending tokens dropped) and frees the blocks no other sequence holds
    // (with cache_prefixes, its full blocks stay cached).
    void remove(SequenceId id);
    // A saved sequence restored into `id`, a sequence fed nothing yet: `tokens` count as
    // computed, with the chunks they ran in, and blocks for them are taken from the pool. Returns
    // those blocks in the sequence's order: the caller writes their keys and values before any
    // step. Throws vkf::Error for a sequence already fed, no tokens, more than sequence_limit,
    // ids >= vocab_size or a key window (the sequence unchanged), or a pool without room for
    // them (the blocks taken go back; remove the sequence).
    std::vector<std::uint32_t> restore(SequenceId id, std::span<const std::uint32_t> tokens,
                                       std::span<const std::uint32_t> chunk_ends);

    // The next step's rows (empty when nothing can run), with the blocks they write into
    // reserved and the copies on write to do first.
    StepSchedule schedule();
    // A later stage of a layer split: the rows `rows` names (the stage before ran them), in
    // that order. Throws vkf::Error, its message starting with `who`, for more rows or
    // sequences than a step holds, a sequence named twice, rows it has not pending, or no
    // room for them (the stages were not given the same calls); a bad schedule changes
    // nothing unless only room was missing.
    StepSchedule follow(std::span<const StageRows> rows, std::string_view who);
    // The step ran: its rows count as computed. Returns each sequence's progress in schedule
    // order (sequences removed meanwhile left out). Throws vkf::Error for a step completed
    // twice.
    std::vector<StepProgress> complete(const StepSchedule& step, const StepOutcome& outcome);

    bool contains(SequenceId id) const { return sequences_.contains(id); }
    bool has_pending() const;
    std::uint32_t position(SequenceId id) const;  // tokens whose keys are in the cache
    std::uint32_t pending(SequenceId id) const;   // fed tokens not run yet
    // Tokens whose blocks came from another sequence (prefix sharing) or the prefix cache.
    std::uint32_t shared_prefix(SequenceId id) const;
    // The key count after each step that ran the sequence (and those of its shared prefix).
    const std::vector<std::uint32_t>& chunk_ends(SequenceId id) const;
    const std::vector<std::uint32_t>& tokens(SequenceId id) const;  // fed, computed ones first
    std::vector<SequenceId> sequences() const;
    std::size_t size() const { return sequences_.size(); }
    // Blocks the sequence holds now (a windowed one at most its ring's), and which.
    std::uint32_t blocks_held(SequenceId id) const;
    const BlockTable& table(SequenceId id) const;
    const KvBlocks& blocks() const { return pool_; }
    // The prefix cache; nullptr without cache_prefixes.
    const PrefixCache* prefix_cache() const { return cache_ ? &*cache_ : nullptr; }
    // The rows a step with prompt rows takes now (adapted from measured times).
    std::uint32_t chunk_limit() const { return chunk_limit_; }
    const SchedulerOptions& options() const { return options_; }

private:
    struct Sequence {
        Sequence(BlockTable&& blocks, std::uint64_t added) : table(std::move(blocks)), order(added) {}

        std::vector<std::uint32_t> tokens;  // fed, computed ones first
        std::vector<std::uint8_t> want;     // per token: its logits are returned
        std::uint32_t computed = 0;         // tokens whose keys are in the cache
        std::uint32_t shared = 0;           // of them, taken from another sequence
        BlockTable table;
        std::vector<std::uint32_t> chunk_ends;
        std::uint64_t order = 0;  // when it was added
        std::uint64_t salt = 0;
    };
    struct Chosen {
        SequenceId id;
        Sequence* seq;
        std::uint32_t rows;
    };
    Sequence& get(SequenceId id);
    const Sequence& get(SequenceId id) const;
    void share_prefix(Sequence& seq);
    // The cached blocks of the sequence's first full blocks, as long as they hit; taken when
    // more than `live` tokens (what a live sequence offers). Returns the tokens taken.
    std::uint32_t take_cached_prefix(Sequence& seq, std::uint32_t live);
    void cache_blocks(const Sequence& seq);
    // The schedule of these rows, whose blocks are reserved.
    StepSchedule emit(const std::vector<Chosen>& chosen, std::vector<BlockCopy> copies) const;

    SchedulerOptions options_;
    KvBlocks pool_;  // before sequences_: their tables release into it as they go
    std::optional<PrefixCache> cache_;
    std::map<SequenceId, Sequence> sequences_;
    SequenceId next_id_ = 1;
    std::uint64_t next_order_ = 0;
    std::uint32_t chunk_limit_ = 0;
};

}  // namespace vkf
