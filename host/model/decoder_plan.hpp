#pragma once
// What one forward step of a decoder does, decided once per step shape from the ops' own
// answers (plan_matmul, plan_attention_call) and only read when the step is recorded: which
// matmul and attention kernels run, whether the QKV projection scatters Q, K and V in place,
// which LayerNorms run inside the matmuls that read them, and the scratch the step needs.
//
// A step runs the rows of several sequences (host/model/batch.hpp): `tokens` rows in all,
// `sequences` sequences, the longest with `max_q_len` rows; `logit_rows` of them go
// through the final norm and the head.

#include "host/model/model.hpp"
#include "host/ops/attention.hpp"
#include "host/ops/matmul.hpp"

#include <compare>
#include <cstdint>
#include <vector>

namespace vkf {

struct StepShape {
    std::uint32_t tokens = 0;
    std::uint32_t sequences = 0;
    std::uint32_t max_q_len = 0;
    std::uint32_t logit_rows = 0;
    auto operator<=>(const StepShape&) const = default;
};

// The settings that decide plans (from BatchOptions, ExecutorOptions::decoder).
struct DecoderSettings {
    bool fuse_qkv = true;
    bool fuse_layernorm = true;
    bool int8_activations = false;
    DType kv_dtype = DType::F16;
    QuantFormat kv_k_quant = QuantFormat::None;
    QuantFormat kv_v_quant = QuantFormat::None;
    std::uint32_t block_size = 16;
    std::uint32_t blocks_per_seq = 0;  // a sequence's block table; a ring with a window
    std::uint32_t window = 0;          // AttentionParams::window (0: full attention)
};

// One layer's matmuls: each matrix planned in its own format (LinearWeights::quant).
struct LayerMatmuls {
    MatmulPlan qkv, attn_out, gate, up, down;  // gate: gated MLPs only
};

struct DecoderPlan {
    StepShape shape;
    // The QKV projection writes Q densely and K and V into the cache through the step's slot
    // mapping (QkvScatter); else it writes the fused QKV rows, and Q and K/V are repacked
    // and appended by separate passes (always for MPT's qk_ln, which normalizes in between,
    // and for a quantized cache, which kv_append quantizes a key row at a time).
    bool scatter = false;
    // The rows whose logits are read back are gathered before the final norm (they are not
    // simply all the step's rows).
    bool gather_logits = false;
    // The model's layers from Model::layers().begin on. Layers of a K-quant mix differ
    // (Q4_K_M's ffn_down is Q6_K in some); scatter and the fused norms are alike in all.
    std::vector<LayerMatmuls> layers;
    MatmulPlan head;  // logit_rows > 0
    // Every layer's attention: its kernel and tiles (plan_attention_call, fp32 Q/O over the
    // cache's K/V), and the parameters and options the recorded op is made with.
    AttentionPlan attention;
    AttentionParams attention_params;
    AttentionOptions attention_options;
    std::uint64_t scratch_bytes = 0;  // the most any of the matmuls needs
};

DecoderPlan plan_decoder_step(const Context& ctx, const Model& model, const DecoderSettings& settings, StepShape shape);

}  // namespace vkf
