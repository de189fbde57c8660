#include "host/model/batch.hpp"

#include "base/error.hpp"
#include "host/quant/kv_quant.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string>

namespace vkf {

namespace {

std::uint32_t ceil_div(std::uint32_t a, std::uint32_t b) {
    return (a + b - 1) / b;
}

BatchOptions checked(const ModelConfig& c, BatchOptions o) {
    if (o.max_tokens == 0) {
        throw Error("batch: max_tokens must be at least 1");
    }
    if (o.block_size == 0) {
        throw Error("batch: block_size must be at least 1");
    }
    if (o.max_sequences == 0) {
        throw Error("batch: max_sequences must be at least 1");
    }
    if (o.max_sequence_tokens == 0 || o.max_sequence_tokens > o.max_tokens) {
        o.max_sequence_tokens = o.max_tokens;
    }
    if (c.learned_pos_emb && o.max_sequence_tokens > c.max_seq_len) {
        throw Error(
            fmt::format("batch: sequences of {} tokens, but the model's learned positions (wpe) cover {} "
                        "(max_seq_len)",
                        o.max_sequence_tokens, c.max_seq_len));
    }
    check_kv_cache_format(o.kv_dtype, o.kv_k_quant, o.kv_v_quant, c.head_dim);
    o.chunk = std::clamp<std::uint32_t>(o.chunk, 1, o.max_tokens);
    if (o.window != 0) {
        // A step's rows and the window before them must fit a sequence's ring (at most the
        // pool): fewer rows per step where the pool is small.
        const std::uint32_t pool = ceil_div(o.max_tokens, o.block_size);
        if (window_ring_blocks(o.window, o.chunk, o.block_size) > pool) {
            const std::uint64_t room = std::uint64_t{pool - 1} * o.block_size;
            if (room <= o.window) {
                throw Error(fmt::format(
                    "batch: a window of {} tokens needs a KV cache of more than {} tokens; it "
                    "holds {}",
                    o.window, std::uint64_t{o.window} + 2 * o.block_size, std::uint64_t{pool} * o.block_size));
            }
            o.chunk = static_cast<std::uint32_t>(std::min<std::uint64_t>(o.chunk, room - o.window));
        }
    }
    return o;
}

// A sequence's block table: the ring its window needs (at most the pool), else its longest.
std::uint32_t blocks_per_sequence(const BatchOptions& o) {
    return o.window != 0
               ? std::min(window_ring_blocks(o.window, o.chunk, o.block_size), ceil_div(o.max_tokens, o.block_size))
               : ceil_div(o.max_sequence_tokens, o.block_size);
}

// The scheduling half of the options (o checked).
SchedulerOptions scheduler_options(const Model& model, const BatchOptions& o) {
    const bool learned_positions = model.config().learned_pos_emb;
    // Measured prompt chunks on GPUs only; later stages of a layer split run the rows the
    // first stage chose.
    const bool adaptive =
        o.submission_target_ms > 0 && model.context().device_info().type != DeviceType::Cpu && model.first_stage();
    return SchedulerOptions{.blocks = ceil_div(o.max_tokens, o.block_size),
                            .block_size = o.block_size,
                            .table_blocks = blocks_per_sequence(o),
                            .max_sequences = o.max_sequences,
                            .chunk = o.chunk,
                            .window = o.window,
                            // With a window positions count on; the kernels and the slot words hold them in 32 bits.
                            .sequence_limit = o.window != 0 && !learned_positions
                                                  ? std::uint64_t{std::numeric_limits<std::int32_t>::max()}
                                                  : o.max_sequence_tokens,
                            .vocab_size = model.config().vocab_size,
                            .share_prefixes = o.share_prefixes,
                            .cache_prefixes = o.cache_prefixes,
                            .submission_target_ms = adaptive ? o.submission_target_ms : 0};
}

// The device half of the options (o checked).
ExecutorOptions executor_options(const BatchOptions& o) {
    return ExecutorOptions{.decoder = {.fuse_qkv = o.fuse_qkv,
                                       .fuse_layernorm = o.fuse_layernorm,
                                       .int8_activations = o.int8_activations,
                                       .kv_dtype = o.kv_dtype,
                                       .kv_k_quant = o.kv_k_quant,
                                       .kv_v_quant = o.kv_v_quant,
                                       .block_size = o.block_size,
                                       .blocks_per_seq = blocks_per_sequence(o),
                                       .window = o.window},
                           .blocks = ceil_div(o.max_tokens, o.block_size),
                           .max_rows = o.chunk,
                           .max_sequences = o.max_sequences,
                           .profiling = o.profiling,
                           .reuse_steps = o.reuse_steps,
                           .poison = o.poison};
}

}  // namespace

SessionSize batch_session_size(const ModelConfig& config, const BatchOptions& options) {
    const BatchOptions o = checked(config, options);
    // window 0: a Batch's cache is its whole pool (a Session's ring is a pool of the ring's size).
    return SessionSize{.max_tokens = o.max_tokens,
                       .chunk = o.chunk,
                       .kv_dtype = o.kv_dtype,
                       .kv_k_quant = o.kv_k_quant,
                       .kv_v_quant = o.kv_v_quant,
                       .block_size = o.block_size,
                       .max_sequences = o.max_sequences,
                       .sequence_blocks = blocks_per_sequence(o)};
}

Batch::Batch(const Model& model, BatchOptions options)
    : model_(model),
      options_(checked(model.config(), options)),
      scheduler_(scheduler_options(model, options_)),
      executor_(model, executor_options(options_)) {}

StepResult Batch::step() {
    if (!model_.first_stage()) {
        throw Error(
            fmt::format("batch: a stage without the embedding ({}) runs the rows the stage before ran: "
                        "step(schedule, hidden)",
                        describe(model_.layers(), model_.config())));
    }
    const StepSchedule schedule = scheduler_.schedule();
    StepResult result{.blocked = schedule.blocked, .deferred = schedule.deferred};
    if (!schedule.empty()) {
        run(schedule, result);
    }
    return result;
}

StepResult Batch::step(std::span<const StageRows> schedule, std::span<const float> hidden_in) {
    const ModelConfig& c = model_.config();
    const std::string stage = fmt::format("batch ({})", describe(model_.layers(), c));
    if (model_.first_stage()) {
        throw Error(fmt::format("{}: the first stage of a split schedules its own steps: step()", stage));
    }
    std::uint64_t rows = 0;
    for (const StageRows& s : schedule) {
        rows += s.rows;
    }
    if (hidden_in.size() != rows * c.hidden) {
        throw Error(fmt::format("{}: {} hidden values for {} rows of {}; expected {}", stage, hidden_in.size(), rows,
                                c.hidden, rows * c.hidden));
    }
    // The scheduler checks the rest (budgets, unknown or repeated sequences, rows not pending)
    // before it reserves anything.
    const StepSchedule followed = scheduler_.follow(schedule, stage);
    StepResult result;
    if (!followed.empty()) {
        run(followed, result, hidden_in);
    }
    return result;
}

std::vector<StepShape> Batch::sequence_shapes(std::uint32_t prompt_tokens) const {
    std::vector<StepShape> shapes;
    const auto add = [&shapes](std::uint32_t rows, std::uint32_t logit_rows) {
        const StepShape shape{.tokens = rows, .sequences = 1, .max_q_len = rows, .logit_rows = logit_rows};
        if (std::find(shapes.begin(), shapes.end(), shape) == shapes.end()) {
            shapes.push_back(shape);
        }
    };
    const std::uint32_t chunk = std::max<std::uint32_t>(scheduler_.chunk_limit(), 1);
    for (std::uint32_t done = 0; done < prompt_tokens;) {
        const std::uint32_t rows = std::min(chunk, prompt_tokens - done);
        done += rows;
        add(rows, done == prompt_tokens ? 1 : 0);
    }
    add(1, 1);
    return shapes;
}

void Batch::run(const StepSchedule& schedule, StepResult& result, std::span<const float> hidden_in) {
    const std::uint32_t vocab = model_.config().vocab_size;
    StepOutput out = executor_.run(schedule, hidden_in);
    result.hidden = std::move(out.hidden);
    // The scheduler's sequences advance; each output takes its rows of the logits, which
    // follow the schedule's sequence order (none on a stage without the head).
    const std::vector<StepProgress> progress = scheduler_.complete(schedule, out.outcome);
    const bool logits_wanted = model_.last_stage();
    std::size_t logit_row = 0, next = 0;
    for (const ScheduledSequence& s : schedule.sequences) {
        const std::uint32_t rows = logits_wanted ? s.logit_rows : 0;
        const auto mine = std::span(out.logits).subspan(logit_row * vocab, std::size_t{rows} * vocab);
        logit_row += rows;
        if (next == progress.size() || progress[next].id != s.id) {
            continue;  // removed meanwhile: the scheduler left it out
        }
        const StepProgress& p = progress[next++];
        result.ran.push_back(SequenceOutput{.id = p.id,
                                            .tokens = p.rows,
                                            .position = p.position,
                                            .done = p.done,
                                            .logits = std::vector<float>(mine.begin(), mine.end())});
    }
}

}  // namespace vkf
