#include "host/model/model.hpp"

#include "host/ops/ops.hpp"
#include "host/spec/alibi.hpp"
#include "runtime/error.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <string>

namespace vkf {

namespace {

constexpr std::uint64_t kF32 = 4;

// The longest rows whose LayerNorm runs inside the row-dot matmul (SessionOptions::
// fuse_layernorm). Each workgroup takes the row's statistics and each column group
// normalizes its X chunks again, so the cost grows with k while the dispatch it saves does
// not: on llvmpipe (2 cores) a 24-layer hidden-64 BLOOM decoded in 8.9 ms of GPU time a
// token fused against 9.8 ms unfused, BLOOM-560m (k = 1024) in 356 ms against 251 ms.
constexpr std::uint32_t kLayerNormFusionMaxK = 128;

BufferRange rows(const Buffer& b, std::uint64_t first_row, std::uint64_t count, std::uint64_t row_elements,
                 std::uint64_t element_bytes = kF32) {
    return BufferRange{
        .buffer = &b, .offset = first_row * row_elements * element_bytes, .size = count * row_elements * element_bytes};
}

BufferRange optional_range(const Buffer& b) {
    return b.valid() ? whole(b) : BufferRange{};
}

// Where Q, K and V of head h, token t sit in the fused QKV projection's output row.
struct QkvLayouts {
    HeadLayout q, k, v;
};

// Elements of one token's fused QKV output: n_head query heads and n_kv_head key and value
// heads.
std::uint64_t qkv_width(const ModelConfig& c) {
    return c.hidden + 2ull * c.n_kv_head * c.head_dim;
}

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

}  // namespace

Model::Model(Context& ctx, const std::filesystem::path& dir, ModelOptions options)
    : ctx_(ctx),
      config_(read_model_config(dir)),
      checkpoint_(std::make_unique<ShardedCheckpoint>(open_checkpoint(dir))) {
    config_ = resolve_with_checkpoint(config_, *checkpoint_);
    check_head_dim(config_.head_dim);
    const WeightFormat format = options.weights.value_or(default_weight_format(*checkpoint_, config_));
    check_model_fits(ctx, estimate_model_memory(config_, format, options.session), "model '" + dir.string() + "'");
    weights_ = upload_weights(ctx, config_, *checkpoint_, format, options.progress, options.check_finite_weights);
    slopes_ = model_alibi_slopes(config_);
}

Model::Model(Context& ctx, const ModelConfig& config, WeightFormat format) : ctx_(ctx), config_(config) {
    validate(config_);
    check_head_dim(config_.head_dim);
    check_model_fits(ctx, estimate_model_memory(config_, format), "a model of this configuration");
    weights_ = synthetic_weights(ctx, config_, format);
    slopes_ = model_alibi_slopes(config_);
}

const ShardedCheckpoint& Model::checkpoint() const {
    if (!checkpoint_) {
        throw Error("model: synthetic weights have no checkpoint");
    }
    return *checkpoint_;
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

Session::Session(const Model& model, SessionOptions options) : model_(model), ctx_(model.context()), options_(options) {
    const ModelConfig& c = model.config();
    if (options_.max_tokens == 0) {
        throw Error("session: max_tokens must be at least 1");
    }
    options_.chunk = std::clamp<std::uint32_t>(options_.chunk, 1, options_.max_tokens);
    if (c.learned_pos_emb && options_.max_tokens > c.max_seq_len) {
        throw Error("session: " + std::to_string(options_.max_tokens) + " tokens, but the model's learned positions (" +
                    "wpe) cover " + std::to_string(c.max_seq_len) + " (max_seq_len)");
    }
    if (options_.kv_dtype != DType::F32 && options_.kv_dtype != DType::F16) {
        throw Error(std::string("session: the KV cache is f32 or f16, not ") + to_string(options_.kv_dtype));
    }
    const std::uint64_t kv_dim = std::uint64_t{c.n_kv_head} * c.head_dim;
    const std::uint64_t cache_bytes = std::uint64_t{options_.max_tokens} * kv_dim * element_size(options_.kv_dtype);
    if (cache_bytes > ctx_.limits().storage_buffer_range) {
        throw Error("session: a KV cache of " + std::to_string(options_.max_tokens) + " tokens x " +
                    std::to_string(kv_dim) + " " + to_string(options_.kv_dtype) + " values per layer is " +
                    std::to_string(cache_bytes) + " bytes, over the device's maxStorageBufferRange of " +
                    std::to_string(ctx_.limits().storage_buffer_range) + "; use fewer tokens");
    }
    // The fused QKV kernel binds more storage buffers than the plain one (QkvScatter; two
    // more with a fused LayerNorm): devices that allow fewer take the separate passes.
    const std::uint32_t scatter_bindings =
        model.weight_format().quant != QuantFormat::None ? kScatterMatmulQuantBindings : kScatterMatmulBindings;
    // MPT's qk_ln normalizes Q and K between the projection and the cache: separate passes.
    fused_ = options_.fuse_qkv && !c.qk_ln && ctx_.limits().storage_buffers >= scatter_bindings;
    for (std::uint32_t l = 0; l < c.n_layer; ++l) {
        k_cache_.push_back(ctx_.create_buffer(cache_bytes, MemoryKind::Device, "K cache " + std::to_string(l)));
        v_cache_.push_back(ctx_.create_buffer(cache_bytes, MemoryKind::Device, "V cache " + std::to_string(l)));
    }
    const std::uint64_t n = options_.chunk;
    adaptive_chunks_ = options_.submission_target_ms > 0 && ctx_.device_info().type != DeviceType::Cpu;
    chunk_limit_ = adaptive_chunks_ ? std::min<std::uint32_t>(options_.chunk, 16) : options_.chunk;
    ids_ = ctx_.create_buffer(n * 4, MemoryKind::Host, "token ids");
    if (c.learned_pos_emb) {
        positions_ = ctx_.create_buffer(n * 4, MemoryKind::Host, "token positions");
    }
    step_ = ctx_.create_buffer(4, MemoryKind::Host, "step key count");
    hidden_ = ctx_.create_buffer(n * c.hidden * kF32, MemoryKind::Device, "hidden");
    normed_ = ctx_.create_buffer(n * c.hidden * kF32, MemoryKind::Device, "normed");
    if (!fused_) {
        qkv_ = ctx_.create_buffer(n * qkv_width(c) * kF32, MemoryKind::Device, "qkv");
    }
    q_ = ctx_.create_buffer(n * c.hidden * kF32, MemoryKind::Device, "q");
    attn_ = ctx_.create_buffer(n * c.hidden * kF32, MemoryKind::Device, "attention output");
    mlp_ = ctx_.create_buffer(n * c.ffn_hidden * kF32, MemoryKind::Device, "mlp");
    if (family_traits(c.family).mlp == MlpKind::Gated) {
        gate_ = ctx_.create_buffer(n * c.ffn_hidden * kF32, MemoryKind::Device, "mlp gate");
    }
    logits_ = ctx_.create_buffer(std::uint64_t{c.vocab_size} * kF32, MemoryKind::Host, "logits");
}

std::uint64_t Session::device_bytes() const {
    std::uint64_t total = 0;
    for (const Buffer& b : k_cache_)
        total += b.size();
    for (const Buffer& b : v_cache_)
        total += b.size();
    for (const Buffer* b :
         {&ids_, &positions_, &step_, &hidden_, &normed_, &qkv_, &q_, &attn_, &mlp_, &gate_, &logits_, &scratch_}) {
        total += b->valid() ? b->size() : 0;
    }
    for (const auto& [key, step] : steps_) {
        total += step->attention->scratch_bytes();
    }
    return total;
}

std::vector<float> Session::forward(std::span<const std::uint32_t> ids, Logits which) {
    const auto start = std::chrono::steady_clock::now();
    const bool all_logits = which == Logits::All;
    const ModelConfig& c = model_.config();
    if (ids.empty()) {
        throw Error("session: forward needs at least one token id");
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] >= c.vocab_size) {
            throw Error("session: token id " + std::to_string(ids[i]) + " at input position " + std::to_string(i) +
                        " is not below the vocabulary size " + std::to_string(c.vocab_size));
        }
    }
    if (ids.size() > options_.max_tokens - position_) {
        throw Error("session: " + std::to_string(ids.size()) + " more tokens after " + std::to_string(position_) +
                    " exceed the KV cache's " + std::to_string(options_.max_tokens) + " tokens");
    }
    const std::size_t rows = which == Logits::None ? 0 : all_logits ? ids.size() : 1;
    std::vector<float> logits(rows * std::size_t{c.vocab_size});
    for (std::size_t first = 0, n = 0; first < ids.size(); first += n) {
        n = std::min<std::size_t>(chunk_limit_, ids.size() - first);
        const bool last_chunk = first + n == ids.size();
        std::span<float> out;
        if (all_logits) {
            out = std::span(logits).subspan(first * c.vocab_size, n * c.vocab_size);
        } else if (last_chunk && which == Logits::Last) {
            out = logits;
        }
        run_chunk(ids.subspan(first, n), all_logits, out);
    }
    stats_.wall_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return logits;
}

void Session::ensure_scratch(std::uint32_t tokens, std::uint32_t logit_rows) {
    const ModelConfig& c = model_.config();
    const WeightFormat wf = model_.weight_format();
    std::uint64_t need = 0;
    const auto qkv_n = static_cast<std::uint32_t>(qkv_width(c));
    for (auto [m, n, k] : {std::array{tokens, qkv_n, c.hidden}, std::array{tokens, c.hidden, c.hidden},
                           std::array{tokens, c.ffn_hidden, c.hidden}, std::array{tokens, c.hidden, c.ffn_hidden},
                           std::array{logit_rows, c.vocab_size, c.hidden}}) {
        if (m > 0) {
            need = std::max(need, matmul_scratch_bytes(ctx_, m, n, k, wf.dense,
                                                       {.int8_activations = options_.int8_activations}, wf.quant));
        }
    }
    // Recorded steps bind these buffers: they go before a buffer is replaced, so that when
    // creating the next one fails, no step is left bound to the one just freed.
    if (need > 0 && (!scratch_.valid() || scratch_.size() < need)) {
        steps_.clear();
        scratch_ = ctx_.create_buffer(need, MemoryKind::Device, "matmul scratch");
    }
    const std::uint64_t logit_bytes = std::uint64_t{logit_rows} * c.vocab_size * kF32;
    if (logit_bytes > logits_.size()) {
        steps_.clear();
        logits_ = ctx_.create_buffer(logit_bytes, MemoryKind::Host, "logits");
    }
}

void Session::record_norm(CommandList& list, const NormWeights& norm, BufferRange x, BufferRange y, std::uint32_t rows,
                          std::uint32_t dim, std::uint32_t stride) const {
    const ModelConfig& c = model_.config();
    record_layernorm(ctx_, list,
                     LayerNormArgs{.x = x,
                                   .weight = whole(norm.weight),
                                   .bias = optional_range(norm.bias),
                                   .y = y,
                                   .rows = rows,
                                   .dim = dim == 0 ? c.hidden : dim,
                                   .eps = static_cast<float>(c.layer_norm_epsilon),
                                   .weight_dtype = model_.weight_format().dense,
                                   .rms = family_traits(c.family).norm == NormKind::RmsNorm,
                                   .x_stride = stride,
                                   .y_stride = stride});
}

XLayerNorm Session::x_norm(const NormWeights& norm) const {
    return XLayerNorm{.weight = whole(norm.weight),
                      .bias = optional_range(norm.bias),
                      .eps = static_cast<float>(model_.config().layer_norm_epsilon)};
}

bool Session::fuses_layernorm(std::uint32_t m, std::uint32_t n, std::uint32_t k, std::uint32_t bindings) const {
    const WeightFormat wf = model_.weight_format();
    const ModelConfig& c = model_.config();
    // The matmul's fused norm is a LayerNorm; BLOOM's post-LN residuals need the norm's output.
    if (family_traits(c.family).norm != NormKind::LayerNorm || c.post_layernorm_residual) {
        return false;
    }
    return options_.fuse_layernorm && k <= kLayerNormFusionMaxK &&
           ctx_.limits().storage_buffers >= bindings + kLayerNormFusedBindings &&
           matmul_fuses_layernorm(plan_matmul(matmul_device(ctx_), m, n, k, wf.dense,
                                              {.int8_activations = options_.int8_activations}, wf.quant));
}

void Session::record_layer(CommandList& list, std::uint32_t layer, std::uint32_t tokens, const Attention& attention) {
    const ModelConfig& c = model_.config();
    const LayerWeights& w = model_.weights().layers[layer];
    const WeightFormat wf = model_.weight_format();
    const DType dt = wf.dense;
    const std::uint32_t h = c.hidden;
    const BufferRange hidden = rows(hidden_, 0, tokens, h);
    const BufferRange normed = rows(normed_, 0, tokens, h);
    const BufferRange q = rows(q_, 0, tokens, h);
    const BufferRange attn = rows(attn_, 0, tokens, h);
    const BufferRange mlp = rows(mlp_, 0, tokens, c.ffn_hidden);
    const BufferRange scratch = optional_range(scratch_);
    // A LayerNorm whose only reader is this matmul runs inside it where the kernel can.
    const auto fuses_norm = [&](const LinearWeights& lw, std::uint32_t bindings) {
        return fuses_layernorm(tokens, lw.out, lw.in, bindings);
    };
    const auto linear = [&](const LinearWeights& lw, BufferRange x, BufferRange y, BufferRange residual, Activation act,
                            std::optional<QkvScatter> scatter = std::nullopt, std::optional<float> clamp = std::nullopt,
                            std::optional<XLayerNorm> x_norm = std::nullopt) {
        record_matmul(ctx_, list,
                      MatmulArgs{.x = x,
                                 .w = whole(lw.weight),
                                 .bias = optional_range(lw.bias),
                                 .residual = residual,
                                 .y = y,
                                 .scratch = scratch,
                                 .m = tokens,
                                 .n = lw.out,
                                 .k = lw.in,
                                 .weight_dtype = dt,
                                 .activation = act,
                                 .options = {.int8_activations = options_.int8_activations},
                                 .quant = wf.quant,
                                 .scales = optional_range(lw.scales),
                                 .scatter = scatter,
                                 .clamp = clamp,
                                 .x_norm = x_norm});
    };
    const std::optional<float> clip =
        c.clip_qkv ? std::optional<float>(static_cast<float>(*c.clip_qkv)) : std::optional<float>();
    const FamilyTraits traits = family_traits(c.family);
    const std::uint64_t kv_dim = std::uint64_t{c.n_kv_head} * c.head_dim;

    // Attention half: h += out_proj(attention(qkv(norm(h)))); BLOOM's post-LN residual form
    // adds norm(h) instead of h.
    const bool qkv_norm = fuses_norm(w.qkv, fused_ ? kScatterMatmulBindings : kMatmulBindings);
    const std::optional<XLayerNorm> attn_norm =
        qkv_norm ? std::optional<XLayerNorm>(x_norm(w.attn_norm)) : std::nullopt;
    const BufferRange qkv_in = qkv_norm ? hidden : normed;
    if (!qkv_norm) {
        record_norm(list, w.attn_norm, hidden, normed, tokens);
    }
    if (fused_) {
        // Q, K and V go straight where attention reads them.
        linear(w.qkv, qkv_in, q, {}, Activation::None,
               QkvScatter{.k_cache = whole(k_cache_[layer]),
                          .v_cache = whole(v_cache_[layer]),
                          .step = whole(step_),
                          .cache_dtype = options_.kv_dtype,
                          .head_dim = c.head_dim,
                          .q_heads = c.n_head,
                          .kv_heads = c.n_kv_head,
                          .interleaved = traits.interleaved_qkv},
               clip, attn_norm);
        attention.record(list, q, whole(k_cache_[layer]), whole(v_cache_[layer]), attn, whole(step_));
    } else {
        const std::uint64_t width = qkv_width(c);
        const BufferRange qkv = rows(qkv_, 0, tokens, width);
        linear(w.qkv, qkv_in, qkv, {}, Activation::None, std::nullopt, clip, attn_norm);
        if (c.qk_ln) {
            // llm-foundry normalizes Q and K after the clamp, in place in the fused output.
            // Strided views: every row's first `dim` columns, from the Q or the K column on.
            const auto view = [&](std::uint64_t first_column, std::uint64_t dim) {
                return BufferRange{.buffer = qkv.buffer,
                                   .offset = qkv.offset + first_column * kF32,
                                   .size = ((tokens - 1) * width + dim) * kF32};
            };
            const BufferRange q_part = view(0, c.hidden);
            record_norm(list, w.q_norm, q_part, q_part, tokens, c.hidden, static_cast<std::uint32_t>(width));
            const BufferRange k_part = view(c.hidden, kv_dim);
            record_norm(list, w.k_norm, k_part, k_part, tokens, static_cast<std::uint32_t>(kv_dim),
                        static_cast<std::uint32_t>(width));
        }
        const QkvLayouts layout = qkv_layouts(c, tokens);
        const auto append = [&](const HeadLayout& src_layout, BufferRange dst, std::uint32_t heads,
                                std::uint32_t max_len, std::uint32_t pos, DType dst_dtype) {
            record_kv_append(ctx_, list,
                             KvAppendArgs{.src = qkv,
                                          .src_layout = src_layout,
                                          .cache = dst,
                                          .shape = {.batch = 1,
                                                    .new_len = tokens,
                                                    .n_kv_head = heads,
                                                    .head_dim = c.head_dim,
                                                    .max_len = max_len,
                                                    .pos = pos},
                                          .cache_dtype = dst_dtype});
        };
        append(layout.q, q, c.n_head, tokens, 0, DType::F32);  // Q repacked densely (fp32) for the attention kernel
        append(layout.k, whole(k_cache_[layer]), c.n_kv_head, options_.max_tokens, position_, options_.kv_dtype);
        append(layout.v, whole(v_cache_[layer]), c.n_kv_head, options_.max_tokens, position_, options_.kv_dtype);
        const std::uint32_t kv_len = position_ + tokens;
        const std::uint64_t kv_bytes = element_size(options_.kv_dtype);
        attention.record(list, q, rows(k_cache_[layer], 0, kv_len, kv_dim, kv_bytes),
                         rows(v_cache_[layer], 0, kv_len, kv_dim, kv_bytes), attn);
    }
    linear(w.attn_out, attn, hidden, c.post_layernorm_residual ? normed : hidden, Activation::None);

    // MLP half: h += down(act(up(norm(h)))), or down(act(gate(norm(h))) * up(norm(h))).
    const bool mlp_norm_fused = traits.mlp == MlpKind::Plain && fuses_norm(w.up, kMatmulBindings);
    if (!mlp_norm_fused) {
        record_norm(list, w.mlp_norm, hidden, normed, tokens);
    }
    BufferRange down_in = mlp;
    if (traits.mlp == MlpKind::Gated) {
        const BufferRange gate = rows(gate_, 0, tokens, c.ffn_hidden);
        linear(w.gate, normed, gate, {}, Activation::None);
        linear(w.up, normed, mlp, {}, Activation::None);
        record_gated_activation(ctx_, list,
                                GatedActivationArgs{.gate = gate,
                                                    .up = mlp,
                                                    .y = gate,
                                                    .rows = tokens,
                                                    .cols = c.ffn_hidden,
                                                    .gate_stride = c.ffn_hidden,
                                                    .up_stride = c.ffn_hidden,
                                                    .activation = traits.activation});
        down_in = gate;
    } else if (mlp_norm_fused) {
        linear(w.up, hidden, mlp, {}, traits.activation, std::nullopt, std::nullopt, x_norm(w.mlp_norm));
    } else {
        linear(w.up, normed, mlp, {}, traits.activation);
    }
    linear(w.down, down_in, hidden, c.post_layernorm_residual ? normed : hidden, Activation::None);
}

std::unique_ptr<Session::Step> Session::record_step(std::uint32_t tokens, std::uint32_t logit_rows) {
    const ModelConfig& c = model_.config();
    const ModelWeights& w = model_.weights();
    const WeightFormat wf = model_.weight_format();
    const DType dt = wf.dense;
    auto step = std::make_unique<Step>();

    // Fused: planned for the whole cache, the key count read from step_ when it runs.
    const AttentionParams params{
        .shape = {.batch = 1,
                  .q_len = tokens,
                  .kv_len = fused_ ? options_.max_tokens : position_ + tokens,
                  .n_head = c.n_head,
                  .n_kv_head = c.n_kv_head,
                  .head_dim = c.head_dim},
        .mask = MaskMode::Causal,
        .alibi = !c.alibi                                                      ? AlibiMode::Off
                 : family_traits(c.family).alibi_form == AlibiForm::FalconBf16 ? AlibiMode::FalconBf16
                                                                               : AlibiMode::Causal,
        .max_bias = static_cast<float>(c.alibi_bias_max),
        .scale = static_cast<float>(attention_scale(c)),
        .slopes = model_.alibi_slopes(),
        .alibi_train_len = c.alibi_train_seq_len.value_or(0),
    };
    step->attention = std::make_unique<Attention>(
        ctx_, params, DType::F32, AttentionOptions{.kv_dtype = options_.kv_dtype, .external_kv_lens = fused_});

    step->list = ctx_.command_list(options_.profiling);
    CommandList& list = *step->list;
    if (ctx_.limits().timestamps && !options_.profiling) {
        list.time_total();
    }
    const std::uint32_t h = c.hidden;
    const BufferRange hidden = rows(hidden_, 0, tokens, h);
    record_embedding(ctx_, list,
                     EmbeddingArgs{.ids = BufferRange{.buffer = &ids_, .offset = 0, .size = tokens * 4ull},
                                   .table = whole(w.embedding),
                                   .out = hidden,
                                   .tokens = tokens,
                                   .vocab = c.vocab_size,
                                   .hidden = h,
                                   .table_dtype = dt,
                                   .quant = wf.quant,
                                   .scales = optional_range(w.embedding_scales)});
    if (w.position_embedding.valid()) {
        // MPT's wpe: the rows of the tokens' positions, added (positions_ is written per chunk).
        const BufferRange positions = rows(normed_, 0, tokens, h);
        record_embedding(ctx_, list,
                         EmbeddingArgs{.ids = BufferRange{.buffer = &positions_, .offset = 0, .size = tokens * 4ull},
                                       .table = whole(w.position_embedding),
                                       .out = positions,
                                       .tokens = tokens,
                                       .vocab = c.max_seq_len,
                                       .hidden = h,
                                       .table_dtype = dt});
        record_add(ctx_, list, hidden, positions, hidden);
    }
    if (c.embedding_scale != 1.0) {
        record_scale(ctx_, list, hidden, hidden, static_cast<float>(c.embedding_scale));  // Jais' muP
    }
    if (w.embedding_norm.weight.valid()) {
        record_norm(list, w.embedding_norm, hidden, hidden, tokens);
    }
    for (std::uint32_t l = 0; l < c.n_layer; ++l) {
        record_layer(list, l, tokens, *step->attention);
    }
    if (logit_rows > 0) {
        // Only the rows whose logits are wanted go through the final norm and the head.
        const std::uint32_t first = tokens - logit_rows;
        const BufferRange last_hidden = rows(hidden_, first, logit_rows, h);
        const BufferRange last_normed = rows(normed_, first, logit_rows, h);
        const bool tied = !w.lm_head.valid();
        const Buffer& head = tied ? w.embedding : w.lm_head;
        const bool head_norm = fuses_layernorm(logit_rows, c.vocab_size, h, kMatmulBindings);
        if (!head_norm) {
            record_norm(list, w.final_norm, last_hidden, last_normed, logit_rows);
        }
        record_matmul(ctx_, list,
                      MatmulArgs{.x = head_norm ? last_hidden : last_normed,
                                 .w = whole(head),
                                 .bias = {},
                                 .residual = {},
                                 .y = rows(logits_, 0, logit_rows, c.vocab_size),
                                 .scratch = optional_range(scratch_),
                                 .m = logit_rows,
                                 .n = c.vocab_size,
                                 .k = h,
                                 .weight_dtype = dt,
                                 .options = {.int8_activations = options_.int8_activations},
                                 .quant = wf.quant,
                                 .scales = optional_range(tied ? w.embedding_scales : w.lm_head_scales),
                                 .x_norm = head_norm ? std::optional<XLayerNorm>(x_norm(w.final_norm)) : std::nullopt});
        if (c.logit_scale || w.lm_head_row_scales.valid()) {
            const BufferRange logits = rows(logits_, 0, logit_rows, c.vocab_size);
            const auto scale = static_cast<float>(c.logit_scale.value_or(1.0));
            if (w.lm_head_row_scales.valid()) {
                record_scale_columns(ctx_, list, logits, whole(w.lm_head_row_scales), logits, scale);
            } else {
                record_scale(ctx_, list, logits, logits, scale);
            }
        }
    }
    list.finish();
    ++stats_.recordings;
    return step;
}

void Session::run_chunk(std::span<const std::uint32_t> ids, bool all_logits, std::span<float> logits_out) {
    const auto tokens = static_cast<std::uint32_t>(ids.size());
    const bool want_logits = !logits_out.empty();
    const std::uint32_t logit_rows = want_logits ? (all_logits ? tokens : 1) : 0;
    ensure_scratch(tokens, logit_rows);
    ctx_.upload(ids_, ids);
    if (positions_.valid()) {
        std::vector<std::uint32_t> positions(tokens);
        for (std::uint32_t t = 0; t < tokens; ++t) {
            positions[t] = position_ + t;
        }
        ctx_.upload(positions_, std::span<const std::uint32_t>(positions));
    }
    const std::uint32_t key_count = position_ + tokens;
    ctx_.upload(step_, std::span(&key_count, 1));

    // Without fusion the append position is recorded into the list: it serves once.
    std::unique_ptr<Step> once;
    Step* step = nullptr;
    if (fused_ && options_.reuse_steps) {
        const std::pair key{tokens, logit_rows};
        auto it = steps_.find(key);
        if (it == steps_.end()) {
            // A few chunk sizes recur (decoding's one token, the prefill chunk); the odd-sized
            // last chunks of prompts would otherwise pile up.
            if (steps_.size() >= 8) {
                std::erase_if(steps_, [](const auto& entry) { return entry.first.first != 1; });
            }
            it = steps_.emplace(key, record_step(tokens, logit_rows)).first;
        }
        step = it->second.get();
    } else {
        once = record_step(tokens, logit_rows);
        step = once.get();
    }
    CommandList& list = *step->list;
    ctx_.submit(list);
    ++stats_.submissions;
    stats_.dispatches += list.dispatch_command_count();
    stats_.barriers += list.barrier_count();
    stats_.tokens += tokens;
    position_ += tokens;
    chunk_ends_.push_back(position_);
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
        if (adaptive_chunks_ && tokens > 1) {
            chunk_limit_ = prompt_chunk_after(ms, tokens, options_.submission_target_ms, options_.chunk);
        }
    }
    if (want_logits) {
        ctx_.download(logits_, logits_out);
    }
}

}  // namespace vkf
