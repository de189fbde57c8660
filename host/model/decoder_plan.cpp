#include "host/model/decoder_plan.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vkf {

DecoderPlan plan_decoder_step(const Context& ctx, const Model& model, const DecoderSettings& settings,
                              StepShape shape) {
    const ModelConfig& c = model.config();
    const FamilyTraits traits = family_traits(c.family);
    const WeightFormat wf = model.weight_format();
    if (shape.tokens == 0 || shape.sequences == 0 || shape.sequences > shape.tokens || shape.max_q_len > shape.tokens ||
        shape.logit_rows > shape.tokens) {
        throw Error(
            fmt::format("decoder plan: inconsistent step shape ({} tokens, {} sequences, {} rows at most, {} "
                        "logit rows)",
                        shape.tokens, shape.sequences, shape.max_q_len, shape.logit_rows));
    }
    DecoderPlan plan{.shape = shape};
    const MatmulDevice device = matmul_device(ctx);
    // The matmul's fused norm is a LayerNorm; BLOOM's post-LN residuals need the norm's output.
    const bool norm_fusable =
        settings.fuse_layernorm && traits.norm == NormKind::LayerNorm && !c.post_layernorm_residual;
    const auto plan_linear = [&](std::uint32_t m, const LinearWeights& w, bool x_norm, bool scatter) {
        MatmulOptions options{.int8_activations = settings.int8_activations};
        options.x_norm = x_norm && norm_fusable;
        options.scatter = scatter;
        MatmulPlan p = plan_matmul(device, m, w.out, w.in, wf.dense, options, w.quant);
        plan.scratch_bytes = std::max(plan.scratch_bytes, p.scratch_bytes);
        return p;
    };
    const std::uint32_t m = shape.tokens;
    // MPT's qk_ln normalizes Q and K between the projection and the cache: separate passes.
    const bool kv_quantized = settings.kv_k_quant != QuantFormat::None || settings.kv_v_quant != QuantFormat::None;
    bool scatter = settings.fuse_qkv && !c.qk_ln && !kv_quantized;
    bool qkv_norm = norm_fusable, up_norm = norm_fusable && traits.mlp != MlpKind::Gated;
    // Planned as asked, then again without a fusion that some layer's format does not take:
    // the step's buffers and norms follow one answer for every layer.
    for (int pass = 0; pass < 2; ++pass) {
        plan.layers.clear();
        bool all_scatter = true, all_qkv_norm = true, all_up_norm = true;
        for (std::uint32_t l = model.layers().begin; l < model.layers().end; ++l) {
            const LayerWeights& w = model.weights().layers.at(l);
            LayerMatmuls& p = plan.layers.emplace_back();
            p.qkv = plan_linear(m, w.qkv, qkv_norm, scatter);
            p.attn_out = plan_linear(m, w.attn_out, false, false);
            if (traits.mlp == MlpKind::Gated) {
                p.gate = plan_linear(m, w.gate, false, false);
            }
            p.up = plan_linear(m, w.up, up_norm, false);
            p.down = plan_linear(m, w.down, false, false);
            all_scatter = all_scatter && p.qkv.scatter;
            all_qkv_norm = all_qkv_norm && p.qkv.x_norm;
            all_up_norm = all_up_norm && p.up.x_norm;
        }
        const bool alike = scatter == all_scatter && qkv_norm == all_qkv_norm && up_norm == all_up_norm;
        scatter = all_scatter;
        qkv_norm = all_qkv_norm;
        up_norm = all_up_norm;
        if (alike) {
            break;
        }
        if (pass == 1) {
            throw Error("decoder plan: internal error, the layers' matmuls disagree on their fusions");
        }
    }
    plan.scatter = scatter;
    if (shape.logit_rows > 0) {
        const ModelWeights& w = model.weights();
        const LinearWeights head{
            .out = c.vocab_size, .in = c.hidden, .quant = w.lm_head.valid() ? w.lm_head_quant : w.embedding_quant};
        plan.head = plan_linear(shape.logit_rows, head, true, false);
        plan.gather_logits = shape.logit_rows != shape.tokens;
    }

    plan.attention_params = AttentionParams{
        .shape = {.batch = shape.sequences,
                  .q_len = shape.max_q_len,
                  .kv_len = settings.blocks_per_seq * settings.block_size,
                  .n_head = c.n_head,
                  .n_kv_head = c.n_kv_head,
                  .head_dim = c.head_dim},
        .mask = MaskMode::Causal,
        .alibi = !c.alibi                                     ? AlibiMode::Off
                 : traits.alibi_form == AlibiForm::FalconBf16 ? AlibiMode::FalconBf16
                                                              : AlibiMode::Causal,
        .max_bias = static_cast<float>(c.alibi_bias_max),
        .scale = static_cast<float>(attention_scale(c)),
        .slopes = model.alibi_slopes(),
        .alibi_train_len = c.alibi_train_seq_len.value_or(0),
        .window = settings.window,
    };
    plan.attention_options = AttentionOptions{
        .kv_dtype = settings.kv_dtype,
        .k_quant = settings.kv_k_quant,
        .v_quant = settings.kv_v_quant,
        .paged = PagedKv{
            .block_size = settings.block_size, .blocks_per_seq = settings.blocks_per_seq, .q_rows = shape.tokens}};
    // Q and O are the step's fp32 rows.
    plan.attention = plan_attention_call(ctx, plan.attention_params, DType::F32, plan.attention_options);
    return plan;
}

}  // namespace vkf
