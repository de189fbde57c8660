#include "host/model/batch.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace vkf {

namespace {

constexpr std::uint64_t kF32 = 4;

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
        throw Error("batch: sequences of " + fmt::to_string(o.max_sequence_tokens) +
                    " tokens, but the model's learned positions (wpe) cover " + fmt::to_string(c.max_seq_len) +
                    " (max_seq_len)");
    }
    o.chunk = std::clamp<std::uint32_t>(o.chunk, 1, o.max_tokens);
    if (o.window != 0) {
        // A step's rows and the window before them must fit a sequence's ring (at most the
        // pool): fewer rows per step where the pool is small.
        const std::uint32_t pool = ceil_div(o.max_tokens, o.block_size);
        if (window_ring_blocks(o.window, o.chunk, o.block_size) > pool) {
            const std::uint64_t room = std::uint64_t{pool - 1} * o.block_size;
            if (room <= o.window) {
                throw Error("batch: a window of " + fmt::to_string(o.window) +
                            " tokens needs a KV cache of more than " +
                            fmt::to_string(std::uint64_t{o.window} + 2 * o.block_size) + " tokens; it holds " +
                            fmt::to_string(std::uint64_t{pool} * o.block_size));
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
                            .submission_target_ms = adaptive ? o.submission_target_ms : 0};
}

}  // namespace

SessionSize batch_session_size(const ModelConfig& config, const BatchOptions& options) {
    const BatchOptions o = checked(config, options);
    // window 0: a Batch's cache is its whole pool (a Session's ring is a pool of the ring's size).
    return SessionSize{.max_tokens = o.max_tokens,
                       .chunk = o.chunk,
                       .kv_dtype = o.kv_dtype,
                       .block_size = o.block_size,
                       .max_sequences = o.max_sequences,
                       .sequence_blocks = blocks_per_sequence(o)};
}

Batch::Batch(const Model& model, BatchOptions options)
    : model_(model),
      ctx_(model.context()),
      options_(checked(model.config(), options)),
      settings_{.fuse_qkv = options_.fuse_qkv,
                .fuse_layernorm = options_.fuse_layernorm,
                .int8_activations = options_.int8_activations,
                .kv_dtype = options_.kv_dtype,
                .block_size = options_.block_size,
                .blocks_per_seq = blocks_per_sequence(options_),
                .window = options_.window},
      cache_(ctx_, model.config(), ceil_div(options_.max_tokens, options_.block_size), options_.block_size,
             options_.kv_dtype, model.layers()),
      scheduler_(scheduler_options(model, options_)) {
    const ModelConfig& c = model.config();
    const std::uint64_t n = options_.chunk;
    const PagedKv paged{.block_size = settings_.block_size, .blocks_per_seq = settings_.blocks_per_seq, .q_rows = 1};
    ids_ = ctx_.create_buffer(n * 4, MemoryKind::Host, "token ids");
    if (c.learned_pos_emb) {
        positions_ = ctx_.create_buffer(n * 4, MemoryKind::Host, "token positions");
    }
    slots_ = ctx_.create_buffer(n * 4, MemoryKind::Host, "KV slots");
    sequence_table_ = ctx_.create_buffer(paged_sequence_table_bytes(options_.max_sequences, paged), MemoryKind::Host,
                                         "sequence table");
    logit_index_ = ctx_.create_buffer(n * 4, MemoryKind::Host, "logit rows");
    hidden_ = ctx_.create_buffer(n * c.hidden * kF32, MemoryKind::Device, "hidden");
    normed_ = ctx_.create_buffer(n * c.hidden * kF32, MemoryKind::Device, "normed");
    q_ = ctx_.create_buffer(n * c.hidden * kF32, MemoryKind::Device, "q");
    attn_ = ctx_.create_buffer(n * c.hidden * kF32, MemoryKind::Device, "attention output");
    mlp_ = ctx_.create_buffer(n * c.ffn_hidden * kF32, MemoryKind::Device, "mlp");
    if (family_traits(c.family).mlp == MlpKind::Gated) {
        gate_ = ctx_.create_buffer(n * c.ffn_hidden * kF32, MemoryKind::Device, "mlp gate");
    }
    if (model.last_stage()) {
        logits_ = ctx_.create_buffer(std::uint64_t{c.vocab_size} * kF32, MemoryKind::Host, "logits");
    }
    buffers_ = StepBuffers{.ids = &ids_,
                           .positions = &positions_,
                           .slots = &slots_,
                           .sequence_table = &sequence_table_,
                           .logit_index = &logit_index_,
                           .hidden = &hidden_,
                           .normed = &normed_,
                           .qkv = &qkv_,
                           .q = &q_,
                           .attn = &attn_,
                           .mlp = &mlp_,
                           .gate = &gate_,
                           .logit_hidden = &logit_hidden_,
                           .logits = &logits_,
                           .scratch = &scratch_};
    if (options_.poison) {
        // Quiet NaNs: an fp32 word, or two fp16 halves.
        const std::uint32_t nan = options_.kv_dtype == DType::F16 ? 0x7E007E00u : 0x7FC00000u;
        for (std::uint32_t l = model.layers().begin; l < model.layers().end; ++l) {
            const std::vector<std::uint32_t> words(cache_.k(l).size() / 4, nan);
            ctx_.upload(cache_.k(l), std::span<const std::uint32_t>(words));
            ctx_.upload(cache_.v(l), std::span<const std::uint32_t>(words));
        }
    }
    // Plans the decode step now: a device the model cannot run on fails here, not mid-run.
    // Whether QKV scatters depends on the device and the weights, not on the step's shape: the
    // fused QKV rows of the separate passes are allocated once, here.
    fused_qkv_ = plan_decoder_step(ctx_, model_, settings_, StepShape{1, 1, 1, 1}).scatter;
    if (!fused_qkv_) {
        qkv_ = ctx_.create_buffer(n * (c.hidden + 2ull * c.n_kv_head * c.head_dim) * kF32, MemoryKind::Device, "qkv");
    }
}

std::uint64_t Batch::device_bytes() const {
    std::uint64_t total = cache_.device_bytes();
    for (const Buffer* b : {&ids_, &positions_, &slots_, &sequence_table_, &logit_index_, &hidden_, &normed_, &qkv_,
                            &q_, &attn_, &mlp_, &gate_, &logit_hidden_, &logits_, &scratch_}) {
        total += b->valid() ? b->size() : 0;
    }
    for (const auto& [shape, step] : steps_) {
        total += step->attention->scratch_bytes();
    }
    return total;
}

StepResult Batch::step() {
    if (!model_.first_stage()) {
        throw Error("batch: a stage without the embedding (" + describe(model_.layers(), model_.config()) +
                    ") runs the rows the stage before ran: step(schedule, hidden)");
    }
    const auto start = std::chrono::steady_clock::now();
    const StepSchedule schedule = scheduler_.schedule();
    StepResult result{.blocked = schedule.blocked, .deferred = schedule.deferred};
    if (!schedule.empty()) {
        run(schedule, result);
    }
    stats_.wall_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return result;
}

void Batch::ensure_buffers(const DecoderPlan& plan) {
    const ModelConfig& c = model_.config();
    // Recorded steps bind these buffers: they go before a buffer is replaced, so that when
    // creating the next one fails, no step is left bound to the one just freed.
    const auto grow = [&](Buffer& b, std::uint64_t bytes, MemoryKind kind, const char* name) {
        if (bytes > 0 && (!b.valid() || b.size() < bytes)) {
            steps_.clear();
            b = Buffer();
            b = ctx_.create_buffer(bytes, kind, name);
        }
    };
    grow(scratch_, plan.scratch_bytes, MemoryKind::Device, "matmul scratch");
    grow(logits_, std::uint64_t{plan.shape.logit_rows} * c.vocab_size * kF32, MemoryKind::Host, "logits");
    if (plan.gather_logits) {
        grow(logit_hidden_, std::uint64_t{plan.shape.logit_rows} * c.hidden * kF32, MemoryKind::Device, "logit rows");
    }
}

DecoderPlan Batch::checked_plan(const StepShape& shape) const {
    DecoderPlan plan = plan_decoder_step(ctx_, model_, settings_, shape);
    if (plan.scatter != fused_qkv_) {
        throw Error("batch: the matmul op answered differently for QKV scatter at " + fmt::to_string(shape.tokens) +
                    " rows than for one; the step's buffers follow the first answer");
    }
    return plan;
}

RecordedStep& Batch::recorded(const StepShape& shape, bool finish) {
    auto it = steps_.find(shape);
    if (it != steps_.end() && options_.reuse_steps) {
        return *it->second;
    }
    const DecoderPlan plan = checked_plan(shape);
    ensure_buffers(plan);
    // A few shapes recur (decoding's n sequences, full prompt chunks); the odd mixes would
    // otherwise pile up.
    if (steps_.size() >= 16) {
        std::erase_if(steps_, [](const auto& entry) { return entry.first.max_q_len != 1; });
    }
    std::unique_ptr<RecordedStep> step = record_decoder_step(ctx_, model_, plan, cache_, buffers_, options_.profiling);
    if (finish) {
        step->list->finish();
    }
    ++stats_.recordings;
    RecordedStep& ref = *step;
    steps_[shape] = std::move(step);
    return ref;
}

PreparationStats Batch::prepare(std::span<const StepShape> wanted) {
    // A stage without the head runs the shapes without logit rows.
    std::vector<StepShape> shapes(wanted.begin(), wanted.end());
    for (StepShape& shape : shapes) {
        shape.logit_rows = model_.last_stage() ? shape.logit_rows : 0;
    }
    PipelinePreparation preparation(ctx_);
    // Every shape's buffers first: growing one would drop the steps recorded before it.
    for (const StepShape& shape : shapes) {
        ensure_buffers(checked_plan(shape));
    }
    // All the steps' pipelines are queued before any list waits for its own.
    for (const StepShape& shape : shapes) {
        if (!steps_.contains(shape)) {
            recorded(shape, false);
        }
    }
    PreparationStats stats = preparation.finish();
    for (const StepShape& shape : shapes) {
        if (auto it = steps_.find(shape); it != steps_.end()) {
            it->second->list->finish();  // encoding: descriptor sets written now, not at the first token
        }
    }
    return stats;
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
    const ModelConfig& c = model_.config();
    copy_blocks(schedule.copies);
    // A stage without the head computes no logits, whatever the sequences asked for.
    const bool logits_wanted = model_.last_stage();
    std::vector<PagedSequence> table;
    for (const ScheduledSequence& s : schedule.sequences) {
        // With a window, kv_len counts positions on past the ring; the kernels read key j at
        // blocks[(j / block_size) % blocks_per_seq] (AttentionParams::window).
        table.push_back(PagedSequence{.q_start = s.q_start, .q_len = s.rows, .kv_len = s.kv_len(), .blocks = s.blocks});
    }
    const StepShape shape{.tokens = schedule.rows(),
                          .sequences = static_cast<std::uint32_t>(schedule.sequences.size()),
                          .max_q_len = schedule.max_q_len,
                          .logit_rows = logits_wanted ? static_cast<std::uint32_t>(schedule.logit_rows.size()) : 0};

    RecordedStep& step = recorded(shape);
    const PagedKv paged{
        .block_size = options_.block_size, .blocks_per_seq = settings_.blocks_per_seq, .q_rows = shape.tokens};
    ctx_.upload(ids_, std::span<const std::uint32_t>(schedule.ids));
    if (positions_.valid()) {
        ctx_.upload(positions_, std::span<const std::uint32_t>(schedule.positions));
    }
    ctx_.upload(slots_, std::span<const std::uint32_t>(schedule.slots));
    ctx_.upload(sequence_table_, std::span<const std::uint32_t>(paged_sequence_table(table, paged, settings_.window)));
    if (shape.logit_rows > 0) {
        ctx_.upload(logit_index_, std::span<const std::uint32_t>(schedule.logit_rows));
    }

    if (options_.poison && shape.logit_rows > 0) {
        const std::vector<float> nan(std::size_t{shape.logit_rows} * c.vocab_size, std::nanf(""));
        ctx_.upload(logits_, std::span<const float>(nan));
    }
    if (!model_.first_stage()) {
        const auto start = std::chrono::steady_clock::now();
        ctx_.upload(hidden_, hidden_in);
        stats_.hand_off_ms +=
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
    CommandList& list = *step.list;
    ctx_.submit(list);
    ++stats_.submissions;
    stats_.dispatches += list.dispatch_command_count();
    stats_.barriers += list.barrier_count();
    stats_.tokens += shape.tokens;
    StepOutcome outcome;
    if (list.times_total()) {
        // Profiling reads every op's timestamps once; their sum is the submission's GPU time.
        double ms = 0.0;
        if (options_.profiling) {
            for (const OpTiming& t : list.timings()) {
                OpProfile& p = profile_[t.label];
                p.ms += t.ms;
                ++p.dispatches;
                ms += t.ms;
            }
        } else {
            ms = list.total_ms();
        }
        stats_.gpu_ms += ms;
        outcome.gpu_ms = ms;
    }
    std::vector<float> logits(std::size_t{shape.logit_rows} * c.vocab_size);
    if (!logits.empty()) {
        ctx_.download(logits_, std::span<float>(logits));
    }
    if (!model_.last_stage()) {
        const auto start = std::chrono::steady_clock::now();
        result.hidden.resize(std::size_t{shape.tokens} * c.hidden);
        ctx_.download(hidden_, std::span<float>(result.hidden));
        stats_.hand_off_ms +=
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
    // The scheduler's sequences advance; each output takes its rows of the logits, which
    // follow the schedule's sequence order.
    const std::vector<StepProgress> progress = scheduler_.complete(schedule, outcome);
    std::size_t logit_row = 0, next = 0;
    for (const ScheduledSequence& s : schedule.sequences) {
        const std::uint32_t rows = logits_wanted ? s.logit_rows : 0;
        const auto mine = std::span(logits).subspan(logit_row * c.vocab_size, std::size_t{rows} * c.vocab_size);
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
