#include "host/model/encoder.hpp"

#include "base/error.hpp"
#include "host/model/tensor_upload.hpp"
#include "host/ops/device_tensor.hpp"
#include "host/ops/ops.hpp"
#include "host/quant/gguf_tensor_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>
#include <utility>

namespace vkf {

namespace {

constexpr std::uint64_t kF32 = 4;

BufferRange optional_range(const Buffer& b) {
    return b.valid() ? whole(b) : BufferRange{};
}

BufferRange first_bytes(const Buffer& b, std::uint64_t bytes) {
    return BufferRange{.buffer = &b, .offset = 0, .size = bytes};
}

WeightFormat default_format(const ShardedCheckpoint& checkpoint, const EncoderConfig& config) {
    for (const ExpectedTensor& expected : expected_encoder_tensors(config)) {
        if (checkpoint.tensor_info(encoder_tensor_name(checkpoint, expected.name)).dtype != DType::F16) {
            return WeightFormat{.dense = DType::F32};
        }
    }
    return WeightFormat{.dense = DType::F16};
}

// The buffers of expected_encoder_tensors(config), in that order, into their slots.
EncoderWeights assemble(const EncoderConfig& c, WeightFormat format, std::vector<UploadedTensor> flat) {
    EncoderWeights w{.format = format};
    for (const UploadedTensor& t : flat) {
        w.bytes += t.values.size() + (t.scales.valid() ? t.scales.size() : 0);
    }
    std::size_t next = 0;
    const auto take = [&]() { return std::move(flat.at(next++)); };
    const auto norm = [&]() {
        NormWeights n{.weight = take().values};
        n.bias = take().values;
        return n;
    };
    const auto linear = [&](std::uint32_t out, std::uint32_t in, bool bias) {
        UploadedTensor weight = take();
        LinearWeights l{.weight = std::move(weight.values), .scales = std::move(weight.scales), .out = out, .in = in};
        if (bias) {
            l.bias = take().values;
        }
        return l;
    };
    UploadedTensor words = take();
    w.word_embeddings = std::move(words.values);
    w.word_embeddings_scales = std::move(words.scales);
    w.token_type = take().values;
    w.embedding_norm = norm();
    const std::uint32_t h = c.hidden;
    for (std::uint32_t i = 0; i < c.n_layer; ++i) {
        EncoderLayerWeights l;
        l.query = linear(h, h, true);
        l.key = linear(h, h, true);
        l.value = linear(h, h, true);
        l.attn_out = linear(h, h, true);
        l.attn_norm = norm();
        l.gated = linear(2 * c.intermediate, h, false);
        l.wo = linear(h, c.intermediate, true);
        l.mlp_norm = norm();
        w.layers.push_back(std::move(l));
    }
    if (next != flat.size()) {
        throw Error("encoder weights: internal error, " + fmt::to_string(flat.size() - next) + " tensors unused");
    }
    return w;
}

}  // namespace

Encoder::Encoder(Context& ctx, const std::filesystem::path& dir, EncoderOptions options)
    : ctx_(ctx),
      config_(read_encoder_config(dir)),
      checkpoint_(std::make_unique<ShardedCheckpoint>(open_encoder_checkpoint(dir))) {
    check_head_dim(config_.head_dim);
    check_encoder_checkpoint(*checkpoint_, config_);
    const WeightFormat format = options.weights.value_or(default_format(*checkpoint_, config_));
    if (format.quant != QuantFormat::None && format.dense != DType::F16) {
        throw Error("encoder weights: quantized matrices go with fp16 norms and biases, not " +
                    std::string(dtype_name(format.dense)));
    }
    std::vector<UploadedTensor> flat;
    for (const ExpectedTensor& expected : expected_encoder_tensors(config_)) {
        flat.push_back(upload_checkpoint_tensor(ctx_, *checkpoint_, encoder_tensor_name(*checkpoint_, expected.name),
                                                expected, format, options.check_finite_weights));
    }
    weights_ = assemble(config_, format, std::move(flat));
}

std::vector<float> Encoder::encode(std::span<const std::uint32_t> ids, const EncodeOptions& options) {
    const EncoderConfig& c = config_;
    const EncoderWeights& w = weights_;
    if (ids.empty()) {
        throw Error("encoder: encode needs at least one token id");
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] >= c.vocab_size) {
            throw Error("encoder: token id " + fmt::to_string(ids[i]) + " at input position " + fmt::to_string(i) +
                        " is not below the vocabulary size " + fmt::to_string(c.vocab_size));
        }
    }
    if (options.normalize && options.pooling == Pooling::None) {
        throw Error("encoder: normalize applies to a pooled embedding (mean or cls), not to pooling none");
    }
    if (ids.size() > EncoderLimits::max_positions) {
        throw Error("encoder: " + fmt::to_string(ids.size()) + " tokens are over vkformer's limit of " +
                    fmt::to_string(EncoderLimits::max_positions));
    }
    const auto tokens = static_cast<std::uint32_t>(ids.size());
    const std::uint32_t h = c.hidden, inter = c.intermediate;
    const WeightFormat wf = w.format;
    const std::uint64_t th = std::uint64_t{tokens} * h;

    // One sequence per call: buffers sized for it, released when the call returns.
    Buffer ids_buf = ctx_.create_buffer(std::uint64_t{tokens} * 4, MemoryKind::Host, "encoder token ids");
    Buffer type_ids = ctx_.create_buffer(std::uint64_t{tokens} * 4, MemoryKind::Device, "encoder token type ids");
    Buffer x = ctx_.create_buffer(th * kF32, MemoryKind::Device, "encoder hidden");
    Buffer tmp = ctx_.create_buffer(th * kF32, MemoryKind::Device, "encoder sublayer output");
    Buffer q = ctx_.create_buffer(th * kF32, MemoryKind::Device, "encoder q");
    Buffer k = ctx_.create_buffer(th * kF32, MemoryKind::Device, "encoder k");
    Buffer v = ctx_.create_buffer(th * kF32, MemoryKind::Device, "encoder v");
    Buffer attn = ctx_.create_buffer(th * kF32, MemoryKind::Device, "encoder attention output");
    Buffer gated = ctx_.create_buffer(2 * std::uint64_t{tokens} * inter * kF32, MemoryKind::Device, "encoder gated");
    Buffer act = ctx_.create_buffer(std::uint64_t{tokens} * inter * kF32, MemoryKind::Device, "encoder geglu");
    const bool pooled = options.pooling != Pooling::None;
    Buffer out;
    if (pooled) {
        out = ctx_.create_buffer(std::uint64_t{h} * kF32, MemoryKind::Host, "encoder embedding");
    }
    std::uint64_t scratch_bytes = 0;
    for (auto [m, n, kk] : {std::array{tokens, h, h}, std::array{tokens, 2 * inter, h}, std::array{tokens, h, inter}}) {
        scratch_bytes = std::max(scratch_bytes, matmul_scratch_bytes(ctx_, m, n, kk, wf.dense, {}, wf.quant));
    }
    Buffer scratch;
    if (scratch_bytes > 0) {
        scratch = ctx_.create_buffer(scratch_bytes, MemoryKind::Device, "encoder matmul scratch");
    }
    if (options.poison) {
        for (const Buffer* b : {&type_ids, &x, &tmp, &q, &k, &v, &attn, &gated, &act}) {
            poison(ctx_, *b);
        }
        if (pooled) {
            poison(ctx_, out);
        }
    }
    ctx_.upload(ids_buf, ids);

    const AttentionParams params{.shape = {.batch = 1,
                                           .q_len = tokens,
                                           .kv_len = tokens,
                                           .n_head = c.n_head,
                                           .n_kv_head = c.n_head,
                                           .head_dim = c.head_dim},
                                 .mask = MaskMode::None,
                                 .alibi = AlibiMode::Symmetric,
                                 .max_bias = 8.0f,
                                 .window = options.window};
    const Attention attention(ctx_, params, DType::F32);

    std::unique_ptr<CommandList> list_owner = ctx_.command_list();
    CommandList& list = *list_owner;
    if (ctx_.limits().timestamps) {
        list.time_total();
    }
    const auto layernorm = [&](const NormWeights& norm, const Buffer& from, const Buffer& to) {
        record_layernorm(ctx_, list,
                         LayerNormArgs{.x = whole(from),
                                       .weight = whole(norm.weight),
                                       .bias = optional_range(norm.bias),
                                       .y = whole(to),
                                       .rows = tokens,
                                       .dim = h,
                                       .eps = static_cast<float>(c.layer_norm_eps),
                                       .weight_dtype = wf.dense});
    };
    const auto linear = [&](const LinearWeights& lw, const Buffer& from, const Buffer& to, BufferRange residual) {
        record_matmul(ctx_, list,
                      MatmulArgs{.x = whole(from),
                                 .w = whole(lw.weight),
                                 .bias = optional_range(lw.bias),
                                 .residual = residual,
                                 .y = whole(to),
                                 .scratch = optional_range(scratch),
                                 .m = tokens,
                                 .n = lw.out,
                                 .k = lw.in,
                                 .weight_dtype = wf.dense,
                                 .quant = wf.quant,
                                 .scales = optional_range(lw.scales)});
    };

    // Embeddings: word + token type 0 (a single segment), then LayerNorm.
    const auto embed = [&](const Buffer& ids_range, const Buffer& table, const Buffer& scales, std::uint32_t vocab,
                           const Buffer& to, bool quantized) {
        const QuantFormat quant = quantized ? wf.quant : QuantFormat::None;
        // Buffers are whole 32-bit words; the op takes the scales' exact bytes.
        const BufferRange scale_range =
            quant == QuantFormat::None ? BufferRange{} : first_bytes(scales, std::uint64_t{vocab} * (h / 32) * 2);
        record_embedding(ctx_, list,
                         EmbeddingArgs{.ids = whole(ids_range),
                                       .table = whole(table),
                                       .out = whole(to),
                                       .tokens = tokens,
                                       .vocab = vocab,
                                       .hidden = h,
                                       .table_dtype = wf.dense,
                                       .quant = quant,
                                       .scales = scale_range});
    };
    record_fill(ctx_, list, whole(type_ids), std::uint32_t{0});
    embed(ids_buf, w.word_embeddings, w.word_embeddings_scales, c.vocab_size, tmp, true);
    embed(type_ids, w.token_type, Buffer{}, c.type_vocab_size, q, false);
    record_add(ctx_, list, whole(tmp), whole(q), whole(tmp));
    layernorm(w.embedding_norm, tmp, x);

    const std::uint64_t row2 = 2ull * inter;
    const BufferRange gate_view = first_bytes(gated, ((tokens - 1) * row2 + inter) * kF32);
    const BufferRange up_view{.buffer = &gated, .offset = inter * kF32, .size = gate_view.size};
    for (const EncoderLayerWeights& l : w.layers) {
        linear(l.query, x, q, {});
        linear(l.key, x, k, {});
        linear(l.value, x, v, {});
        attention.record(list, whole(q), whole(k), whole(v), whole(attn));
        linear(l.attn_out, attn, tmp, whole(x));
        layernorm(l.attn_norm, tmp, x);
        linear(l.gated, x, gated, {});
        // jina-bert's GLU: GELU on the first half (the "gated" columns) times the second.
        record_gated_activation(ctx_, list,
                                GatedActivationArgs{.gate = gate_view,
                                                    .up = up_view,
                                                    .y = whole(act),
                                                    .rows = tokens,
                                                    .cols = inter,
                                                    .gate_stride = static_cast<std::uint32_t>(row2),
                                                    .up_stride = static_cast<std::uint32_t>(row2),
                                                    .activation = Activation::GeluErf});
        linear(l.wo, act, tmp, whole(x));
        layernorm(l.mlp_norm, tmp, x);
    }
    if (pooled) {
        record_pooling(ctx_, list,
                       PoolingArgs{.x = whole(x),
                                   .y = whole(out),
                                   .rows = tokens,
                                   .dim = h,
                                   .pooling = options.pooling,
                                   .normalize = options.normalize});
    }
    list.finish();
    ctx_.submit(list);
    last_gpu_ms_ = list.times_total() ? list.total_ms() : 0.0;

    std::vector<float> result(pooled ? h : th);
    ctx_.download(pooled ? out : x, std::span<float>(result));
    return result;
}

}  // namespace vkf
