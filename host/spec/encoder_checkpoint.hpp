#pragma once
// Seeded random JinaBERT checkpoints in the Hugging Face layout, for tests and demos where no
// model can be downloaded (vkf-make-checkpoint --family jina-bert): config.json
// (encoder_hf_config_json) and the safetensors files, tensors named as jina-embeddings-v2
// names them. Distributions as random_weights.hpp's (weight_distribution by role).

#include "host/io/safetensors_writer.hpp"
#include "host/spec/encoder_config.hpp"

#include <cstdint>
#include <filesystem>

namespace vkf {

struct EncoderCheckpointOptions {
    std::uint64_t seed = 1;
    DType dtype = DType::F16;  // F32, F16 or BF16
    int shards = 1;
    // Store every tensor under "bert." as JinaBertForMaskedLM checkpoints do (the loader
    // accepts both).
    bool bert_prefix = false;
};

// Every value depends only on the seed, the tensor's name (without the prefix) and the
// element's index: the same seed gives the same model in every dtype, sharding and prefix.
// Throws vkf::Error naming the file on any failure; a checkpoint whose writing failed has no
// config.json.
void write_random_encoder_checkpoint(const std::filesystem::path& dir, const EncoderConfig& config,
                                     const EncoderCheckpointOptions& options = {},
                                     const CheckpointProgressCallback& progress = {});

}  // namespace vkf
