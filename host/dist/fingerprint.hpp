#pragma once
// What every rank of a layer split must agree on before loading anything: the vkformer
// build, the model's config, the checkpoint (a hash of config.json, the shard index and every
// shard's tensor headers: names, dtypes, shapes, offsets; not the tensor data, which would
// mean reading the whole model on every rank), the split, and the options that shape the
// stages' work. compare_fingerprints names the ranks that differ. The hello also carries what
// rank 0 needs to plan `--split auto` (RankDevice): not compared, ranks may differ in it.

#include "host/io/json.hpp"

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace vkf::dist {

// The device a rank opened, for rank 0's `--split auto`: ranks on one host with the same
// device UUID (lavapipe under mpirun -n 2, or two ranks on one GPU) share its memory.
struct RankDevice {
    std::string host;          // the host's name (gethostname)
    std::string name;          // the device's name
    std::string uuid;          // the device's UUID, hex
    std::uint64_t budget = 0;  // bytes its buffers can still get (Context::memory_budget().available())
};

struct Fingerprint {
    std::string version;     // vkformer's version and git commit
    std::string config;      // hash of config.json's bytes
    std::string checkpoint;  // hash of the index and the tensor headers
    std::string split;       // the --split given and the layers it gives this run
    std::string options;     // the options every stage must share (weights, KV dtype, ...)
    RankDevice device;       // not compared
};

// Each rank's budget divided by the number of ranks on the same device (same host, name and
// UUID): what `--split auto` may plan with on each.
std::vector<std::uint64_t> shared_budgets(std::span<const Fingerprint> by_rank);

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
