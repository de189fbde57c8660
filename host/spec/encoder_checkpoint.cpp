#include "host/spec/encoder_checkpoint.hpp"

#include "host/spec/random_weights.hpp"

#include <string_view>
#include <vector>

namespace vkf {

void write_random_encoder_checkpoint(const std::filesystem::path& dir, const EncoderConfig& config,
                                     const EncoderCheckpointOptions& options,
                                     const CheckpointProgressCallback& progress) {
    std::vector<TensorSource> tensors;
    for (ExpectedTensor& expected : expected_encoder_tensors(config)) {
        tensors.push_back(
            TensorSource{.name = (options.bert_prefix ? std::string(kBertPrefix) : std::string()) + expected.name,
                         .shape = std::move(expected.shape),
                         .values = seeded_values(options.seed, expected.name, expected.role)});
    }
    // Made first (it refuses a dtype torch cannot name) and written last.
    const std::string config_json = encoder_hf_config_json(config, options.dtype);
    write_safetensors_checkpoint(dir, tensors, options.dtype, options.shards, progress);
    write_text_file(dir / "config.json", config_json);
}

}  // namespace vkf
