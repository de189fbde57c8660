// StepExecutor (host/model/step_executor.hpp): the cache, the buffers, and the steps recorded
// per shape. Running a schedule is in step_executor_run.cpp.

#include "host/model/step_executor.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vkf {

namespace {

constexpr std::uint64_t kF32 = 4;

const ExecutorOptions& checked(const ExecutorOptions& o) {
    if (o.blocks == 0 || o.max_rows == 0 || o.max_sequences == 0 || o.decoder.block_size == 0 ||
        o.decoder.blocks_per_seq == 0) {
        throw Error(
            fmt::format("step executor: {} KV blocks of {} tokens, block tables of {}, {} rows and {} "
                        "sequences a step; each must be at least 1",
                        o.blocks, o.decoder.block_size, o.decoder.blocks_per_seq, o.max_rows, o.max_sequences));
    }
    return o;
}

}  // namespace

StepExecutor::StepExecutor(const Model& model, const ExecutorOptions& options)
    : model_(model),
      ctx_(model.context()),
      options_(checked(options)),
      cache_(ctx_, model.config(), options_.blocks, options_.decoder.block_size, options_.decoder.kv_dtype,
             model.layers(), options_.decoder.kv_k_quant, options_.decoder.kv_v_quant) {
    const ModelConfig& c = model.config();
    const std::uint64_t n = options_.max_rows;
    const PagedKv paged{
        .block_size = options_.decoder.block_size, .blocks_per_seq = options_.decoder.blocks_per_seq, .q_rows = 1};
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
        // Quiet NaNs: an fp32 word, or two fp16 halves (in a quantized cache, NaN scales).
        const std::uint32_t nan = options_.decoder.kv_dtype == DType::F16 ? 0x7E007E00u : 0x7FC00000u;
        for (std::uint32_t l = model.layers().begin; l < model.layers().end; ++l) {
            for (const Buffer* pool : {&cache_.k(l), &cache_.v(l)}) {
                const std::vector<std::uint32_t> words(pool->size() / 4, nan);
                ctx_.upload(*pool, std::span<const std::uint32_t>(words));
            }
        }
    }
    // Plans the decode step now: a device the model cannot run on fails here, not mid-run.
    // Whether QKV scatters depends on the device and the weights, not on the step's shape: the
    // fused QKV rows of the separate passes are allocated once, here.
    fused_qkv_ = plan_decoder_step(ctx_, model_, options_.decoder, StepShape{1, 1, 1, 1}).scatter;
    if (!fused_qkv_) {
        qkv_ = ctx_.create_buffer(n * (c.hidden + 2ull * c.n_kv_head * c.head_dim) * kF32, MemoryKind::Device, "qkv");
    }
}

std::uint64_t StepExecutor::device_bytes() const {
    std::uint64_t total = cache_.device_bytes();
    for (const Buffer* b : {&ids_, &positions_, &slots_, &sequence_table_, &logit_index_, &hidden_, &normed_, &qkv_,
                            &q_, &attn_, &mlp_, &gate_, &logit_hidden_, &logits_, &scratch_}) {
        total += b->valid() ? b->size() : 0;
    }
    for (const auto& [shape, step] : steps_) {
        total += step.recorded->attention->scratch_bytes();
    }
    return total;
}

StepShape StepExecutor::shape(const StepSchedule& schedule) const {
    return StepShape{.tokens = schedule.rows(),
                     .sequences = static_cast<std::uint32_t>(schedule.sequences.size()),
                     .max_q_len = schedule.max_q_len,
                     .logit_rows = model_.last_stage() ? static_cast<std::uint32_t>(schedule.logit_rows.size()) : 0};
}

const DecoderPlan* StepExecutor::plan(const StepShape& shape) const {
    const auto it = steps_.find(shape);
    return it != steps_.end() ? &it->second.plan : nullptr;
}

void StepExecutor::ensure_buffers(const DecoderPlan& plan) {
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

DecoderPlan StepExecutor::checked_plan(const StepShape& shape) const {
    DecoderPlan plan = plan_decoder_step(ctx_, model_, options_.decoder, shape);
    if (plan.scatter != fused_qkv_) {
        throw Error(
            fmt::format("step executor: the matmul op answered differently for QKV scatter at {} rows than "
                        "for one; the step's buffers follow the first answer",
                        shape.tokens));
    }
    return plan;
}

RecordedStep& StepExecutor::recorded(const StepShape& shape, bool finish) {
    auto it = steps_.find(shape);
    if (it != steps_.end() && options_.reuse_steps) {
        return *it->second.recorded;
    }
    DecoderPlan plan = checked_plan(shape);
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
    steps_.insert_or_assign(shape, Step{.plan = std::move(plan), .recorded = std::move(step)});
    return ref;
}

PreparationStats StepExecutor::prepare(std::span<const StepShape> wanted) {
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
            it->second.recorded->list->finish();  // encoding: descriptor sets written now, not at the first token
        }
    }
    return stats;
}

}  // namespace vkf
