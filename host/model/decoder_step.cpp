#include "host/model/decoder_step.hpp"

#include "base/error.hpp"
#include "host/ops/ops.hpp"

#include <optional>
#include <tuple>

namespace vkf {

namespace {

constexpr std::uint64_t kF32 = 4;

BufferRange rows(const Buffer& b, std::uint64_t first_row, std::uint64_t count, std::uint64_t row_elements) {
    return BufferRange{.buffer = &b, .offset = first_row * row_elements * kF32, .size = count * row_elements * kF32};
}

BufferRange optional_range(const Buffer* b) {
    return b != nullptr && b->valid() ? whole(*b) : BufferRange{};
}

BufferRange optional_range(const Buffer& b) {
    return b.valid() ? whole(b) : BufferRange{};
}

// Elements of one token's fused QKV output: n_head query heads and n_kv_head key and value heads.
std::uint64_t qkv_width(const ModelConfig& c) {
    return c.hidden + 2ull * c.n_kv_head * c.head_dim;
}

// Where Q, K and V of head h, token t sit in the fused QKV projection's output row.
struct QkvLayouts {
    HeadLayout q, k, v;
};

QkvLayouts qkv_layouts(const ModelConfig& c, std::uint32_t tokens) {
    const std::uint64_t row = qkv_width(c);
    const std::uint64_t batch_stride = row * tokens;
    if (family_traits(c.family).interleaved_qkv) {
        // [n_head, 3, head_dim]: the heads interleave their q, k and v.
        const std::uint64_t head = 3ull * c.head_dim;
        return {
            .q = {.offset = 0, .batch_stride = batch_stride, .token_stride = row, .head_stride = head},
            .k = {.offset = c.head_dim, .batch_stride = batch_stride, .token_stride = row, .head_stride = head},
            .v = {.offset = 2ull * c.head_dim, .batch_stride = batch_stride, .token_stride = row, .head_stride = head}};
    }
    // [q | k | v]: n_head query heads, then n_kv_head key heads and as many value heads.
    const std::uint64_t kv = std::uint64_t{c.n_kv_head} * c.head_dim;
    return {
        .q = {.offset = 0, .batch_stride = batch_stride, .token_stride = row, .head_stride = c.head_dim},
        .k = {.offset = c.hidden, .batch_stride = batch_stride, .token_stride = row, .head_stride = c.head_dim},
        .v = {.offset = c.hidden + kv, .batch_stride = batch_stride, .token_stride = row, .head_stride = c.head_dim}};
}

class StepRecorder {
public:
    StepRecorder(Context& ctx, const Model& model, const DecoderPlan& plan, const KvCache& cache, const StepBuffers& b,
                 CommandList& list)
        : ctx_(ctx), model_(model), c_(model.config()), plan_(plan), cache_(cache), b_(b), list_(list) {}

    void embedding();
    void layer(std::uint32_t layer, const Attention& attention);
    void head();

private:
    // The family's norm (LayerNorm or RMSNorm) over `rows` rows of `dim` elements (0: hidden),
    // `stride` apart (0: dense).
    void norm(const NormWeights& norm, BufferRange x, BufferRange y, std::uint32_t rows, std::uint32_t dim = 0,
              std::uint32_t stride = 0) const;
    XLayerNorm x_norm(const NormWeights& norm) const {
        return XLayerNorm{.weight = whole(norm.weight),
                          .bias = optional_range(norm.bias),
                          .eps = static_cast<float>(c_.layer_norm_epsilon)};
    }
    // y = act(x . W^T + bias) + residual, as `plan` says; `norm` is the LayerNorm of x the
    // plan may have fused (else x is already normalized).
    void linear(const MatmulPlan& plan, const LinearWeights& w, BufferRange x, BufferRange y, BufferRange residual,
                Activation act, const NormWeights* norm = nullptr, std::optional<QkvScatter> scatter = std::nullopt,
                std::optional<float> clamp = std::nullopt) const;
    void matmul(const MatmulPlan& plan, MatmulArgs args, const NormWeights* norm) const;
    void separate_qkv(std::uint32_t layer, const LayerWeights& w, BufferRange qkv_in, const NormWeights* fused_norm,
                      std::optional<float> clip);
    std::uint32_t tokens() const { return plan_.shape.tokens; }
    const LayerMatmuls& layer_plan(std::uint32_t layer) const { return plan_.layers.at(layer - model_.layers().begin); }

    Context& ctx_;
    const Model& model_;
    const ModelConfig& c_;
    const DecoderPlan& plan_;
    const KvCache& cache_;
    const StepBuffers& b_;
    CommandList& list_;
};

void StepRecorder::norm(const NormWeights& norm, BufferRange x, BufferRange y, std::uint32_t rows, std::uint32_t dim,
                        std::uint32_t stride) const {
    record_layernorm(ctx_, list_,
                     LayerNormArgs{.x = x,
                                   .weight = whole(norm.weight),
                                   .bias = optional_range(norm.bias),
                                   .y = y,
                                   .rows = rows,
                                   .dim = dim == 0 ? c_.hidden : dim,
                                   .eps = static_cast<float>(c_.layer_norm_epsilon),
                                   .weight_dtype = model_.weight_format().dense,
                                   .rms = family_traits(c_.family).norm == NormKind::RmsNorm,
                                   .x_stride = stride,
                                   .y_stride = stride});
}

void StepRecorder::matmul(const MatmulPlan& plan, MatmulArgs args, const NormWeights* norm) const {
    if (plan.x_norm) {
        args.x_norm = x_norm(*norm);
    }
    record_matmul(ctx_, list_, plan, args);
}

void StepRecorder::linear(const MatmulPlan& plan, const LinearWeights& w, BufferRange x, BufferRange y,
                          BufferRange residual, Activation act, const NormWeights* norm,
                          std::optional<QkvScatter> scatter, std::optional<float> clamp) const {
    const WeightFormat wf = model_.weight_format();
    matmul(plan,
           MatmulArgs{.x = x,
                      .w = whole(w.weight),
                      .bias = optional_range(w.bias),
                      .residual = residual,
                      .y = y,
                      .scratch = optional_range(b_.scratch),
                      .m = tokens(),
                      .n = w.out,
                      .k = w.in,
                      .weight_dtype = wf.dense,
                      .activation = act,
                      .quant = w.quant,
                      .scales = optional_range(w.scales),
                      .scatter = scatter,
                      .clamp = clamp},
           norm);
}

void StepRecorder::embedding() {
    const ModelWeights& w = model_.weights();
    const WeightFormat wf = model_.weight_format();
    const std::uint32_t h = c_.hidden;
    const BufferRange hidden = rows(*b_.hidden, 0, tokens(), h);
    record_embedding(ctx_, list_,
                     EmbeddingArgs{.ids = BufferRange{.buffer = b_.ids, .offset = 0, .size = tokens() * 4ull},
                                   .table = whole(w.embedding),
                                   .out = hidden,
                                   .tokens = tokens(),
                                   .vocab = c_.vocab_size,
                                   .hidden = h,
                                   .table_dtype = wf.dense,
                                   .quant = w.embedding_quant,
                                   .scales = optional_range(w.embedding_scales)});
    if (w.position_embedding.valid()) {
        // MPT's wpe: the rows of the tokens' positions, added.
        const BufferRange positions = rows(*b_.normed, 0, tokens(), h);
        record_embedding(ctx_, list_,
                         EmbeddingArgs{.ids = BufferRange{.buffer = b_.positions, .offset = 0, .size = tokens() * 4ull},
                                       .table = whole(w.position_embedding),
                                       .out = positions,
                                       .tokens = tokens(),
                                       .vocab = c_.max_seq_len,
                                       .hidden = h,
                                       .table_dtype = wf.dense});
        record_add(ctx_, list_, hidden, positions, hidden);
    }
    if (c_.embedding_scale != 1.0) {
        record_scale(ctx_, list_, hidden, hidden, static_cast<float>(c_.embedding_scale));  // Jais' muP
    }
    if (w.embedding_norm.weight.valid()) {
        norm(w.embedding_norm, hidden, hidden, tokens());
    }
}

void StepRecorder::separate_qkv(std::uint32_t layer, const LayerWeights& w, BufferRange qkv_in,
                                const NormWeights* fused_norm, std::optional<float> clip) {
    const std::uint64_t width = qkv_width(c_);
    const std::uint64_t kv_dim = std::uint64_t{c_.n_kv_head} * c_.head_dim;
    const BufferRange qkv = rows(*b_.qkv, 0, tokens(), width);
    linear(layer_plan(layer).qkv, w.qkv, qkv_in, qkv, {}, Activation::None, fused_norm, std::nullopt, clip);
    if (c_.qk_ln) {
        // llm-foundry normalizes Q and K after the clamp, in place in the fused output.
        // Strided views: every row's first `dim` columns, from the Q or the K column on.
        const auto view = [&](std::uint64_t first_column, std::uint64_t dim) {
            return BufferRange{.buffer = qkv.buffer,
                               .offset = qkv.offset + first_column * kF32,
                               .size = ((tokens() - 1) * width + dim) * kF32};
        };
        const BufferRange q_part = view(0, c_.hidden);
        norm(w.q_norm, q_part, q_part, tokens(), c_.hidden, static_cast<std::uint32_t>(width));
        const BufferRange k_part = view(c_.hidden, kv_dim);
        norm(w.k_norm, k_part, k_part, tokens(), static_cast<std::uint32_t>(kv_dim), static_cast<std::uint32_t>(width));
    }
    const QkvLayouts layout = qkv_layouts(c_, tokens());
    // Q repacked densely (fp32) for the attention kernel.
    record_kv_append(ctx_, list_,
                     KvAppendArgs{.src = qkv,
                                  .src_layout = layout.q,
                                  .cache = rows(*b_.q, 0, tokens(), c_.hidden),
                                  .shape = {.batch = 1,
                                            .new_len = tokens(),
                                            .n_kv_head = c_.n_head,
                                            .head_dim = c_.head_dim,
                                            .max_len = tokens(),
                                            .pos = 0},
                                  .cache_dtype = DType::F32});
    // K and V to the cache rows of the step's slot mapping.
    const std::uint32_t pool_rows = cache_.block_count() * cache_.block_size();
    for (const auto& [src_layout, pool, quant] : {std::tuple{layout.k, &cache_.k(layer), cache_.k_quant()},
                                                  std::tuple{layout.v, &cache_.v(layer), cache_.v_quant()}}) {
        record_kv_append(ctx_, list_,
                         KvAppendArgs{.src = qkv,
                                      .src_layout = src_layout,
                                      .cache = whole(*pool),
                                      .shape = {.batch = 1,
                                                .new_len = tokens(),
                                                .n_kv_head = c_.n_kv_head,
                                                .head_dim = c_.head_dim,
                                                .max_len = pool_rows,
                                                .pos = 0},
                                      .cache_dtype = cache_.dtype(),
                                      .cache_quant = quant,
                                      .slots = BufferRange{.buffer = b_.slots, .offset = 0, .size = tokens() * 4ull}});
    }
}

void StepRecorder::layer(std::uint32_t layer, const Attention& attention) {
    const LayerWeights& w = model_.weights().layers[layer];
    const LayerMatmuls& plan = layer_plan(layer);
    const FamilyTraits traits = family_traits(c_.family);
    const std::uint32_t h = c_.hidden;
    const BufferRange hidden = rows(*b_.hidden, 0, tokens(), h);
    const BufferRange normed = rows(*b_.normed, 0, tokens(), h);
    const BufferRange q = rows(*b_.q, 0, tokens(), h);
    const BufferRange attn = rows(*b_.attn, 0, tokens(), h);
    const BufferRange mlp = rows(*b_.mlp, 0, tokens(), c_.ffn_hidden);
    const std::optional<float> clip =
        c_.clip_qkv ? std::optional<float>(static_cast<float>(*c_.clip_qkv)) : std::optional<float>();

    // Attention half: h += out_proj(attention(qkv(norm(h)))); BLOOM's post-LN residual form
    // adds norm(h) instead of h.
    const BufferRange qkv_in = plan.qkv.x_norm ? hidden : normed;
    if (!plan.qkv.x_norm) {
        norm(w.attn_norm, hidden, normed, tokens());
    }
    const BufferRange slots{.buffer = b_.slots, .offset = 0, .size = tokens() * 4ull};
    if (plan_.scatter) {
        // Q, K and V go straight where attention reads them.
        linear(plan.qkv, w.qkv, qkv_in, q, {}, Activation::None, &w.attn_norm,
               QkvScatter{.k_cache = whole(cache_.k(layer)),
                          .v_cache = whole(cache_.v(layer)),
                          .slots = slots,
                          .cache_dtype = cache_.dtype(),
                          .head_dim = c_.head_dim,
                          .q_heads = c_.n_head,
                          .kv_heads = c_.n_kv_head,
                          .interleaved = traits.interleaved_qkv},
               clip);
    } else {
        separate_qkv(layer, w, qkv_in, &w.attn_norm, clip);
    }
    attention.record(list_, q, whole(cache_.k(layer)), whole(cache_.v(layer)), attn, whole(*b_.sequence_table));
    linear(plan.attn_out, w.attn_out, attn, hidden, c_.post_layernorm_residual ? normed : hidden, Activation::None);

    // MLP half: h += down(act(up(norm(h)))), or down(act(gate(norm(h))) * up(norm(h))).
    const bool mlp_norm_fused = traits.mlp == MlpKind::Plain && plan.up.x_norm;
    if (!mlp_norm_fused) {
        norm(w.mlp_norm, hidden, normed, tokens());
    }
    BufferRange down_in = mlp;
    if (traits.mlp == MlpKind::Gated) {
        const BufferRange gate = rows(*b_.gate, 0, tokens(), c_.ffn_hidden);
        linear(plan.gate, w.gate, normed, gate, {}, Activation::None);
        linear(plan.up, w.up, normed, mlp, {}, Activation::None);
        record_gated_activation(ctx_, list_,
                                GatedActivationArgs{.gate = gate,
                                                    .up = mlp,
                                                    .y = gate,
                                                    .rows = tokens(),
                                                    .cols = c_.ffn_hidden,
                                                    .gate_stride = c_.ffn_hidden,
                                                    .up_stride = c_.ffn_hidden,
                                                    .activation = traits.activation});
        down_in = gate;
    } else {
        linear(plan.up, w.up, mlp_norm_fused ? hidden : normed, mlp, {}, traits.activation, &w.mlp_norm);
    }
    linear(plan.down, w.down, down_in, hidden, c_.post_layernorm_residual ? normed : hidden, Activation::None);
}

void StepRecorder::head() {
    const ModelWeights& w = model_.weights();
    const WeightFormat wf = model_.weight_format();
    const std::uint32_t h = c_.hidden;
    const std::uint32_t n = plan_.shape.logit_rows;
    // Only the rows whose logits are wanted go through the final norm and the head.
    BufferRange x = rows(*b_.hidden, 0, tokens(), h);
    if (plan_.gather_logits) {
        x = rows(*b_.logit_hidden, 0, n, h);
        record_embedding(ctx_, list_,
                         EmbeddingArgs{.ids = BufferRange{.buffer = b_.logit_index, .offset = 0, .size = n * 4ull},
                                       .table = rows(*b_.hidden, 0, tokens(), h),
                                       .out = x,
                                       .tokens = n,
                                       .vocab = tokens(),
                                       .hidden = h,
                                       .table_dtype = DType::F32});
    }
    const BufferRange normed = rows(*b_.normed, 0, n, h);
    if (!plan_.head.x_norm) {
        norm(w.final_norm, x, normed, n);
    }
    const bool tied = !w.lm_head.valid();
    const BufferRange logits = rows(*b_.logits, 0, n, c_.vocab_size);
    matmul(plan_.head,
           MatmulArgs{.x = plan_.head.x_norm ? x : normed,
                      .w = whole(tied ? w.embedding : w.lm_head),
                      .y = logits,
                      .scratch = optional_range(b_.scratch),
                      .m = n,
                      .n = c_.vocab_size,
                      .k = h,
                      .weight_dtype = wf.dense,
                      .quant = tied ? w.embedding_quant : w.lm_head_quant,
                      .scales = optional_range(tied ? w.embedding_scales : w.lm_head_scales)},
           &w.final_norm);
    if (c_.logit_scale || w.lm_head_row_scales.valid()) {
        const auto scale = static_cast<float>(c_.logit_scale.value_or(1.0));
        if (w.lm_head_row_scales.valid()) {
            record_scale_columns(ctx_, list_, logits, whole(w.lm_head_row_scales), logits, scale);
        } else {
            record_scale(ctx_, list_, logits, logits, scale);
        }
    }
}

}  // namespace

std::unique_ptr<RecordedStep> record_decoder_step(Context& ctx, const Model& model, const DecoderPlan& plan,
                                                  const KvCache& cache, const StepBuffers& buffers, bool profiling) {
    auto step = std::make_unique<RecordedStep>();
    // The attention op takes the step's plan: what DecoderPlan shows is what runs.
    step->attention =
        std::make_unique<Attention>(ctx, plan.attention_params, DType::F32, plan.attention_options, plan.attention);
    step->list = ctx.command_list(profiling);
    CommandList& list = *step->list;
    if (ctx.limits().timestamps && !profiling) {
        list.time_total();
    }
    StepRecorder recorder(ctx, model, plan, cache, buffers, list);
    // A stage of a layer split: the first embeds the ids, the others start from the hidden
    // rows the stage before computed (uploaded into `hidden` before the submission); only
    // the last has the head.
    if (model.first_stage()) {
        recorder.embedding();
    }
    for (std::uint32_t l = model.layers().begin; l < model.layers().end; ++l) {
        recorder.layer(l, *step->attention);
    }
    if (plan.shape.logit_rows > 0) {
        if (!model.last_stage()) {
            throw Error("decoder step: logits asked of a stage without the head (" +
                        describe(model.layers(), model.config()) + ")");
        }
        recorder.head();
    }
    return step;
}

}  // namespace vkf
