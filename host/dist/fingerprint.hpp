#pragma once
// What every rank of a layer split must agree on before loading anything: the vkformer
// build, the model's config, the checkpoint (a hash of config.json, the shard index and every
// shard's tensor headers: names, dtypes, shapes, offsets; not the tensor data, which would
// mean reading the whole model on every rank), the split, and the options that shape the
// stages' work. compare_fingerprints names the ranks that differ.

#include "host/io/json.hpp"

#include <filesystem>
#include <span>
#include <string>

namespace vkf::dist {

struct Fingerprint {
    std::string version;     // vkformer's version and git commit
    std::string config;      // hash of config.json's bytes
    std::string checkpoint;  // hash of the index and the tensor headers
    std::string split;       // the --split given and the layers it gives this run
    std::string options;     // the options every stage must share (weights, KV dtype, ...)
};

// 64-bit FNV-1a as 16 hex digits: the same on every host and compiler.
std::string fnv1a_hex(std::string_view bytes);

// The fingerprint of the model directory `model`; `split` and `options` as the caller words them.
Fingerprint fingerprint(const std::filesystem::path& model, std::string split, std::string options);

nlohmann::ordered_json to_json(const Fingerprint& f);
// Throws vkf::Error for a message that is not a fingerprint.
Fingerprint fingerprint_from_json(const std::string& text);

// Empty when every rank's fingerprint is the same; else one sentence per field that differs,
// grouping the ranks by value: "the split differs: rank 0 has X; ranks 1, 2 have Y".
std::string compare_fingerprints(std::span<const Fingerprint> by_rank);

}  // namespace vkf::dist
