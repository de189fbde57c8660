#pragma once
// The tensors a checkpoint of a model configuration holds, and the check that a
// checkpoint holds them.

#include "host/spec/model_config.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace vkf {

class ShardedCheckpoint;

// What a weight is; the checkpoint writer picks its random distribution from it, and block
// quantization takes the Embedding and LinearWeight matrices (the position table stays dense).
enum class TensorRole { Embedding, NormWeight, NormBias, LinearWeight, LinearBias, PositionEmbedding };

// Where a tensor goes in the forward pass, whatever its family calls it.
enum class TensorSlot {
    Embedding,          // [vocab, hidden]
    PositionEmbedding,  // MPT wpe [max_seq_len, hidden]
    EmbeddingNorm,      // BLOOM word_embeddings_layernorm
    AttnNorm,
    Qkv,  // the fused projection, [(n_head + 2 n_kv_head) head_dim, hidden]
    QNorm,
    KNorm,  // MPT qk_ln
    AttnOut,
    MlpNorm,
    Up,    // the plain MLP's first matrix, or the gated MLP's multiplied (linear) half
    Gate,  // the gated MLP's activated half (Baichuan gate_proj, Jais c_fc2)
    Down,
    FinalNorm,
    LmHead,  // only when untied
};

struct ExpectedTensor {
    // As the checkpoint names it, without the "transformer." prefix of BLOOM, MPT, Falcon
    // and Jais checkpoints (Baichuan's names start with "model." and are complete).
    std::string name;
    std::vector<std::size_t> shape;  // as the model uses it: [out, in] for a linear weight
    TensorRole role;
    TensorSlot slot = TensorSlot::Embedding;
    std::uint32_t layer = 0;  // of the per-layer slots
    bool bias = false;        // the bias (or a norm's bias) of its slot, not the weight
    // Stored as [in, out] (GPT-2's Conv1D: Jais): readers transpose it to `shape`.
    bool transposed = false;
    // The shape in the file: `shape`, reversed when transposed.
    std::vector<std::size_t> stored_shape() const;
};

// Every tensor a checkpoint of this configuration holds, in the order of the forward
// pass. lm_head.weight [vocab, hidden] is listed only when tie_word_embeddings is false.
std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config);

// A config settled against its checkpoint where the config alone is ambiguous: MPT with
// ALiBi gets learned positions when the checkpoint holds wpe (llm-foundry's modeling code adds
// both when learned_pos_emb is set; mosaicml/mpt-7b's adds wpe only without ALiBi, and its
// checkpoints, whose configs say true, hold none).
ModelConfig resolve_with_checkpoint(ModelConfig config, const ShardedCheckpoint& checkpoint);

// The name a Hugging Face checkpoint stores a tensor under: "transformer." + name, except
// lm_head.weight, which sits outside the transformer, and Baichuan's "model." names.
std::string checkpoint_tensor_name(std::string_view name);

// A float tensor read as float32 in the model's orientation (`shape`): transposed tensors
// are turned around. Throws vkf::Error naming the file on a short or unreadable tensor.
std::vector<float> read_tensor_f32(const ShardedCheckpoint& checkpoint, const ExpectedTensor& tensor);

// Checks that every expected tensor is present (with or without the "transformer."
// prefix) with the expected shape and a dtype vkformer reads (F32, F16, BF16). Throws one
// vkf::Error listing the problems, each naming the file and the tensor. Tensors the
// configuration does not use are ignored.
void check_checkpoint(const ShardedCheckpoint& checkpoint, const ModelConfig& config);

// Throws the one vkf::Error a checkpoint check reports, when `problems` is not empty:
// "`subject` does not match the FAMILY config (N problems):" and the first 20, one a line.
void throw_if_problems(std::string_view subject, const ModelConfig& config, const std::vector<std::string>& problems);
// The same for a family named `family` (an encoder's: "jina-bert").
void throw_if_problems(std::string_view subject, std::string_view family, const std::vector<std::string>& problems);

}  // namespace vkf
