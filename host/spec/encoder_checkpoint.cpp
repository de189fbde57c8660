#include "host/spec/encoder_checkpoint.hpp"

#include "host/spec/random_weights.hpp"

#include <string_view>
#include <vector>

namespace vkf {
namespace {

// SplitMix64's finalizer: counters into independent-looking bits, the same on every platform.
std::uint64_t mix64(std::uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

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

void write_random_encoder_checkpoint(const std::filesystem::path& dir, const EncoderConfig& config,
                                     const EncoderCheckpointOptions& options,
                                     const CheckpointProgressCallback& progress) {
    std::vector<TensorSource> tensors;
    for (ExpectedTensor& expected : expected_encoder_tensors(config)) {
        const WeightDistribution distribution = weight_distribution(expected.role);
        const std::uint64_t key = mix64(options.seed ^ mix64(hash_name(expected.name)));
        tensors.push_back(
            TensorSource{.name = (options.bert_prefix ? std::string(kBertPrefix) : std::string()) + expected.name,
                         .shape = std::move(expected.shape),
                         .values = [distribution, key](std::uint64_t first, std::span<float> out) {
                             for (std::size_t i = 0; i < out.size(); ++i) {
                                 const std::uint64_t bits = mix64(key + (first + i) * 0x9e3779b97f4a7c15ull);
                                 out[i] = distribution.offset + distribution.scale * unit_uniform(bits);
                             }
                         }});
    }
    // Made first (it refuses a dtype torch cannot name) and written last.
    const std::string config_json = encoder_hf_config_json(config, options.dtype);
    write_safetensors_checkpoint(dir, tensors, options.dtype, options.shards, progress);
    write_text_file(dir / "config.json", config_json);
}

}  // namespace vkf
