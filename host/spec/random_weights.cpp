#include "host/spec/random_weights.hpp"

#include "host/spec/refact_layout.hpp"
#include "host/util/splitmix64.hpp"

#include <cmath>
#include <string_view>
#include <vector>

namespace vkf {
namespace {

std::uint64_t hash_name(std::string_view name) {
    std::uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a
    for (char c : name) {
        hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    }
    return hash;
}

// Uniform in (-1, 1), symmetric, from the top 24 bits.
float unit_uniform(std::uint64_t bits) {
    const auto top = static_cast<float>(bits >> 40);
    return (top + 0.5f) * (2.0f / 16777216.0f) - 1.0f;
}

}  // namespace

WeightDistribution weight_distribution(TensorRole role) {
    // Uniform on (-a, a) has standard deviation a / sqrt(3).
    const float std_002 = 0.02f * std::sqrt(3.0f);
    switch (role) {
        case TensorRole::Embedding:
        case TensorRole::PositionEmbedding:
        case TensorRole::LinearWeight:
            return {.offset = 0.0f, .scale = std_002};
        case TensorRole::NormWeight:
            return {.offset = 1.0f, .scale = 0.1f};
        case TensorRole::NormBias:
        case TensorRole::LinearBias:
            return {.offset = 0.0f, .scale = 0.02f};
    }
    return {.offset = 0.0f, .scale = 0.0f};
}

std::function<void(std::uint64_t, std::span<float>)> seeded_values(std::uint64_t seed, std::string_view name,
                                                                   TensorRole role) {
    const WeightDistribution distribution = weight_distribution(role);
    const std::uint64_t key = splitmix64_mix(seed ^ splitmix64_mix(hash_name(name)));
    return [distribution, key](std::uint64_t first, std::span<float> out) {
        for (std::size_t i = 0; i < out.size(); ++i) {
            const std::uint64_t bits = splitmix64_mix(key + (first + i) * kGoldenGamma);
            out[i] = distribution.offset + distribution.scale * unit_uniform(bits);
        }
    };
}

void write_random_checkpoint(const std::filesystem::path& dir, const ModelConfig& config, std::uint64_t seed,
                             DType dtype, int shards, const CheckpointProgressCallback& progress) {
    std::vector<TensorSource> tensors;
    for (ExpectedTensor& expected : expected_tensors(config)) {
        tensors.push_back(TensorSource{.name = checkpoint_tensor_name(expected.name),
                                       .shape = expected.stored_shape(),
                                       .values = seeded_values(seed, expected.name, expected.role)});
    }
    if (config.family == ModelFamily::Refact) {
        tensors = refact_stored_tensors(std::move(tensors));  // attn.q + attn.kv, mlp.gate_up_proj
    }
    // Made first (it refuses a dtype torch cannot name) and written last: a checkpoint whose
    // writing failed has no config.json, so nothing mistakes it for a model.
    const std::string config_json = hf_config_json(config, dtype);
    write_safetensors_checkpoint(dir, tensors, dtype, shards, progress);
    write_text_file(dir / "config.json", config_json);
}

}  // namespace vkf
