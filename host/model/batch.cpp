#include "host/model/batch.hpp"

#include "runtime/error.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>

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
        throw Error("batch: sequences of " + std::to_string(o.max_sequence_tokens) +
                    " tokens, but the model's learned positions (wpe) cover " + std::to_string(c.max_seq_len) +
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
                throw Error("batch: a window of " + std::to_string(o.window) +
                            " tokens needs a KV cache of more than " +
                            std::to_string(std::uint64_t{o.window} + 2 * o.block_size) + " tokens; it holds " +
                            std::to_string(std::uint64_t{pool} * o.block_size));
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

std::uint32_t prompt_chunk_after(double gpu_ms, std::uint32_t tokens, std::uint32_t target_ms,
                                 std::uint32_t max_chunk) {
    if (gpu_ms <= 0.0 || tokens == 0) {
        return max_chunk;
    }
    // As many tokens as fit the target at this chunk's time per token, rounded down to a
    // power of two so that few chunk sizes (recorded lists) recur.
    const double fit = target_ms / (gpu_ms / tokens);
    if (fit >= max_chunk) {
        return max_chunk;
    }
    return std::bit_floor(static_cast<std::uint32_t>(std::max(fit, 1.0)));
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
             options_.kv_dtype, model.layers()) {
    const ModelConfig& c = model.config();
    const std::uint64_t n = options_.chunk;
    // Later stages of a layer split run the rows the first stage chose.
    adaptive_chunks_ =
        options_.submission_target_ms > 0 && ctx_.device_info().type != DeviceType::Cpu && model.first_stage();
    chunk_limit_ = adaptive_chunks_ ? std::min<std::uint32_t>(options_.chunk, 16) : options_.chunk;
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

Batch::Sequence& Batch::get(SequenceId id) {
    auto it = sequences_.find(id);
    if (it == sequences_.end()) {
        throw Error("batch: no sequence " + std::to_string(id));
    }
    return it->second;
}

const Batch::Sequence& Batch::get(SequenceId id) const {
    auto it = sequences_.find(id);
    if (it == sequences_.end()) {
        throw Error("batch: no sequence " + std::to_string(id));
    }
    return it->second;
}

SequenceId Batch::add() {
    const SequenceId id = next_id_++;
    sequences_[id].order = next_order_++;
    return id;
}

void Batch::feed(SequenceId id, std::span<const std::uint32_t> ids, Logits logits) {
    Sequence& seq = get(id);
    const ModelConfig& c = model_.config();
    if (ids.empty()) {
        throw Error("batch: sequence " + std::to_string(id) + " fed no token ids");
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] >= c.vocab_size) {
            throw Error("batch: token id " + std::to_string(ids[i]) + " at input position " + std::to_string(i) +
                        " is not below the vocabulary size " + std::to_string(c.vocab_size));
        }
    }
    if (ids.size() > sequence_limit() - seq.tokens.size()) {
        throw Error("batch: " + std::to_string(ids.size()) + " more tokens after " + std::to_string(seq.tokens.size()) +
                    " exceed a sequence's " + std::to_string(sequence_limit()) + " tokens");
    }
    const bool fresh = seq.tokens.empty();
    seq.tokens.insert(seq.tokens.end(), ids.begin(), ids.end());
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const bool last = i + 1 == ids.size();
        seq.want.push_back(logits == Logits::All || (logits == Logits::Last && last) ? 1 : 0);
    }
    if (fresh && options_.share_prefixes) {
        share_prefix(seq);
    }
}

bool Batch::has_pending() const {
    return std::any_of(sequences_.begin(), sequences_.end(),
                       [](const auto& entry) { return entry.second.computed < entry.second.tokens.size(); });
}

std::uint32_t Batch::position(SequenceId id) const {
    return get(id).computed;
}

std::uint32_t Batch::pending(SequenceId id) const {
    const Sequence& seq = get(id);
    return static_cast<std::uint32_t>(seq.tokens.size()) - seq.computed;
}

std::uint32_t Batch::shared_prefix(SequenceId id) const {
    return get(id).shared;
}

const std::vector<std::uint32_t>& Batch::chunk_ends(SequenceId id) const {
    return get(id).chunk_ends;
}

std::vector<SequenceId> Batch::sequences() const {
    std::vector<SequenceId> ids;
    for (const auto& [id, seq] : sequences_) {
        ids.push_back(id);
    }
    return ids;
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
    StepResult result;
    // Decode tokens first (they hold a user waiting token by token), then prompt chunks, each
    // group in the order the sequences were added.
    std::vector<std::pair<SequenceId, Sequence*>> order;
    for (auto& [id, seq] : sequences_) {
        if (seq.computed < seq.tokens.size()) {
            order.emplace_back(id, &seq);
        }
    }
    std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
        const bool a_decode = a.second->tokens.size() - a.second->computed == 1;
        const bool b_decode = b.second->tokens.size() - b.second->computed == 1;
        return a_decode != b_decode ? a_decode : a.second->order < b.second->order;
    });
    std::vector<Scheduled> scheduled;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> copies;
    std::uint32_t rows = 0;
    for (auto& [id, seq] : order) {
        const auto want = static_cast<std::uint32_t>(seq->tokens.size()) - seq->computed;
        if (rows == chunk_limit_ || scheduled.size() == options_.max_sequences) {
            result.deferred.push_back(id);
            continue;
        }
        const std::uint32_t n = reserve(*seq, std::min(want, chunk_limit_ - rows), copies);
        if (n == 0) {
            result.blocked.push_back(id);
            continue;
        }
        scheduled.push_back(Scheduled{id, seq, n});
        rows += n;
    }
    if (!scheduled.empty()) {
        copy_blocks(copies);
        run(scheduled, result);
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
        throw Error("batch: the matmul op answered differently for QKV scatter at " + std::to_string(shape.tokens) +
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
    const std::uint32_t chunk = std::max<std::uint32_t>(chunk_limit_, 1);
    for (std::uint32_t done = 0; done < prompt_tokens;) {
        const std::uint32_t rows = std::min(chunk, prompt_tokens - done);
        done += rows;
        add(rows, done == prompt_tokens ? 1 : 0);
    }
    add(1, 1);
    return shapes;
}

void Batch::run(std::vector<Scheduled>& scheduled, StepResult& result, std::span<const float> hidden_in) {
    const ModelConfig& c = model_.config();
    const std::uint32_t bs = options_.block_size;
    std::vector<std::uint32_t> ids, positions, slots, logit_index;
    std::vector<PagedSequence> table;
    StepShape shape{.sequences = static_cast<std::uint32_t>(scheduled.size())};
    for (const Scheduled& s : scheduled) {
        const Sequence& seq = *s.seq;
        // With a window, kv_len counts positions on past the ring; the kernels read key j at
        // blocks[(j / block_size) % blocks_per_seq] (AttentionParams::window).
        table.push_back(PagedSequence{.q_start = static_cast<std::uint32_t>(ids.size()),
                                      .q_len = s.rows,
                                      .kv_len = seq.computed + s.rows,
                                      .blocks = seq.blocks});
        for (std::uint32_t i = 0; i < s.rows; ++i) {
            const std::uint32_t pos = seq.computed + i;
            if (seq.want[pos] != 0 && model_.last_stage()) {
                logit_index.push_back(static_cast<std::uint32_t>(ids.size()));
            }
            ids.push_back(seq.tokens[pos]);
            positions.push_back(pos);
            slots.push_back(table_entry(*s.seq, pos / bs) * bs + pos % bs);
        }
        shape.max_q_len = std::max(shape.max_q_len, s.rows);
    }
    shape.tokens = static_cast<std::uint32_t>(ids.size());
    shape.logit_rows = static_cast<std::uint32_t>(logit_index.size());

    RecordedStep& step = recorded(shape);
    const PagedKv paged{.block_size = bs, .blocks_per_seq = settings_.blocks_per_seq, .q_rows = shape.tokens};
    ctx_.upload(ids_, std::span<const std::uint32_t>(ids));
    if (positions_.valid()) {
        ctx_.upload(positions_, std::span<const std::uint32_t>(positions));
    }
    ctx_.upload(slots_, std::span<const std::uint32_t>(slots));
    ctx_.upload(sequence_table_, std::span<const std::uint32_t>(paged_sequence_table(table, paged, settings_.window)));
    if (!logit_index.empty()) {
        ctx_.upload(logit_index_, std::span<const std::uint32_t>(logit_index));
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
        if (adaptive_chunks_ && shape.tokens > shape.sequences) {
            chunk_limit_ = prompt_chunk_after(ms, shape.tokens, options_.submission_target_ms, options_.chunk);
        }
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
    std::size_t logit_row = 0;
    for (const Scheduled& s : scheduled) {
        Sequence& seq = *s.seq;
        SequenceOutput out{.id = s.id, .tokens = s.rows};
        for (std::uint32_t i = 0; i < s.rows; ++i) {
            if (seq.want[seq.computed + i] != 0 && model_.last_stage()) {
                const auto row = std::span(logits).subspan(logit_row++ * c.vocab_size, c.vocab_size);
                out.logits.insert(out.logits.end(), row.begin(), row.end());
            }
        }
        seq.computed += s.rows;
        seq.chunk_ends.push_back(seq.computed);
        out.position = seq.computed;
        out.done = seq.computed == seq.tokens.size();
        result.ran.push_back(std::move(out));
    }
}

}  // namespace vkf
