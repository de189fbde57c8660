#pragma once
// Every decoder family described in one place: host/spec/families/<family>.cpp holds its
// FamilySpec (names, config.json parsing and writing, traits, the settings its code has, its
// own checks, its tensor names, what vkf-make-checkpoint --family writes), and families()
// collects them. Everything that differs by family reads this table instead of switching
// on ModelFamily, so adding a family means one file and one entry in family_spec.cpp.

#include "host/spec/model_config.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace vkf {

class JsonValue;

// The names of a family's tensors, without the "transformer." prefix (model_tensors.hpp).
// Empty where the family has no such tensor.
struct FamilyTensorNames {
    std::string_view embedding, position_embedding, embedding_norm;
    std::string_view layer_prefix;  // + layer index + "."
    std::string_view attn_norm, qkv, q_norm, k_norm, attn_out, mlp_norm, up, gate, down;
    std::string_view final_norm;
    bool conv1d = false;  // linear weights stored [in, out] (GPT-2's Conv1D)
};

// Which of ModelConfig's optional settings a family's modeling code has; validate() refuses
// the others by name ("clip_qkv is not a setting of bloom models").
struct FamilySettings {
    bool grouped_query = false;  // n_kv_head != n_head
    bool clip_qkv = false;
    bool qk_ln = false;
    bool learned_pos_emb = false;
    bool no_alibi = false;
    bool alibi_bias_max = false;  // other than 8
    bool softmax_scale = false;
    bool logit_scale = false;
    bool embedding_scale = false;
    bool alibi_scaling = false;
    bool post_layernorm_residual = false;
    bool normalized_lm_head = false;
    bool no_bias = false;
};

// --- what vkf-make-checkpoint --family writes --------------------------------------------

struct CheckpointShape {
    std::uint32_t n_layer = 0, hidden = 0, n_head = 0, vocab_size = 0;
};

// A name --family takes: the family's own, or a variant that its config tells apart
// (baichuan2: Baichuan with Baichuan2's vocabulary, by which its NormHead is recognized).
struct CheckpointVariant {
    std::string_view name;
    CheckpointShape tiny;  // --preset tiny
    // Throws vkf::Error when sizes given on the command line would make another variant.
    void (*check)(const ModelConfig& config) = nullptr;
};

// A named shape (--preset bloom-560m) of the family.
struct CheckpointPreset {
    std::string_view name;
    CheckpointShape shape;
    std::string_view note;  // for --help: "about 1 GiB in f16"
};

// A command-line option only this family takes (--qk-ln); its value reaches `configure`.
struct CheckpointOption {
    enum class Kind { Flag, Positive, Count };  // no value; a finite number > 0; an integer >= min
    std::string_view flag;
    Kind kind = Kind::Flag;
    std::string_view value_name;  // "N" in "--kv-heads N"
    std::uint32_t min = 1;        // of a Count
    std::string_view help;
};

// The family-only options given, by flag; a Count is held exactly (below 2^53).
class CheckpointOptionValues {
public:
    void set(std::string_view flag, double value);
    bool given(std::string_view flag) const;
    std::optional<double> number(std::string_view flag) const;
    std::optional<std::uint32_t> count(std::string_view flag) const;
    bool empty() const { return values_.empty(); }

private:
    std::map<std::string, double, std::less<>> values_;
};

struct CheckpointWriterSpec {
    std::span<const CheckpointVariant> variants;  // the first is named as the family
    std::span<const CheckpointPreset> presets;
    std::span<const CheckpointOption> options;
    // The family's usual settings (mpt-7b's no_bias, jais-13b's muP multipliers, ...), then
    // its options, over a config whose sizes, head_dim and n_kv_head = n_head are set.
    void (*configure)(ModelConfig& config, const CheckpointOptionValues& options) = nullptr;
};

// --- the family ------------------------------------------------------------------------

struct FamilySpec {
    ModelFamily family;
    std::string_view name;          // family_name(): "bloom"
    std::string_view display_name;  // in prose: "BLOOM"
    // Every config.json model_type it reads ("falcon", and Falcon-RW's older "RefinedWeb").
    std::span<const std::string_view> model_types;
    FamilyTraits traits;
    // no_bias drops the norms' biases too (MPT), not only the linear layers' (Falcon).
    bool no_bias_drops_norm_bias = false;
    FamilySettings settings;
    FamilyTensorNames tensors;
    // The sizes, the family's own keys and its refusals, each error naming the key; bos/eos
    // ids and validate() are the caller's.
    ModelConfig (*parse)(const JsonValue& root) = nullptr;
    // config.json as transformers writes it, without the token ids; torch_dtype is
    // "float32", "float16" or "bfloat16".
    nlohmann::json (*write)(const ModelConfig& config, std::string_view torch_dtype) = nullptr;
    // Consistency the settings cannot state (BLOOM's MLP is 4h): the problem, or empty.
    std::string (*check)(const ModelConfig& config) = nullptr;
    CheckpointWriterSpec writer;
};

// Every decoder family, in ModelFamily order (families()[i].family == ModelFamily(i)).
std::span<const FamilySpec> families();
// Throws vkf::Error for a value that is no family.
const FamilySpec& family_spec(ModelFamily family);
// The family that reads config.json's model_type `type`, or null.
const FamilySpec* find_family_by_model_type(std::string_view type);

struct CheckpointFamily {
    const FamilySpec* spec = nullptr;
    const CheckpointVariant* variant = nullptr;
};
// What vkf-make-checkpoint --family NAME writes; null members when no family takes NAME.
CheckpointFamily find_checkpoint_family(std::string_view name);

struct CheckpointFamilyPreset {
    const FamilySpec* spec = nullptr;
    const CheckpointPreset* preset = nullptr;
};
// A named preset (not "tiny"); null members when none has that name.
CheckpointFamilyPreset find_checkpoint_preset(std::string_view name);

// "a", "a and b", "a, b and c".
std::string and_list(std::span<const std::string_view> words);

}  // namespace vkf
