#pragma once
// `vkf-bench llama`'s rows: llama-bench's fields, in its order and with its JSON types (its
// tools/llama-bench/llama-bench.cpp, test::get_fields()), so that a row of either tool reads
// as a row of the same table, followed by vkformer's own fields (all named "vkf_..."): the
// driver, the effective limits, the fraction of the measured bandwidth, the sequences
// decoding together and the correctness check against the float64 reference.
// Writers for llama-bench's four text forms: -o json, jsonl, csv and md.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vkf::bench {

// One llama-bench test: pp (n_prompt, no n_gen), tg (n_gen alone) or pg (both), timed after
// n_depth tokens already in the cache; vkformer's `sequences` run it together in one batch.
struct LlamaTest {
    std::uint32_t n_prompt = 0, n_gen = 0, n_depth = 0;
    std::uint32_t sequences = 1;
    bool operator==(const LlamaTest&) const = default;
};

// llama-bench's name of a test ("pp512", "tg128", "pp512+tg128", " @ d4096" after it), with
// " x4" for four sequences together (vkformer's).
std::string test_label(const LlamaTest& t);

struct LlamaRow {
    // llama-bench's fields (what vkformer has no use for keeps llama-bench's default)
    std::string build_commit;  // vkformer's short commit
    std::int64_t build_number = 0;
    std::string cpu_info, gpu_info, backends = "Vulkan";
    std::string model_filename, model_type;
    std::uint64_t model_size = 0, model_n_params = 0;
    std::int64_t n_batch = 0, n_ubatch = 0;  // tokens per prompt submission
    std::int64_t n_threads = 1;
    std::string type_k = "f16", type_v = "f16";
    std::int64_t n_gpu_layers = 0;  // every layer runs on the device
    std::int64_t main_gpu = 0;      // the device's index
    std::int64_t flash_attn = 1;    // vkformer's attention is always tiled (flash)
    LlamaTest test;
    std::string test_time;
    std::vector<std::uint64_t> samples_ns;  // wall clock of each repetition
    // vkformer's fields
    std::string vkformer_version;
    std::string device_name, driver_name, driver_info, driver_version, api_version;
    std::uint32_t driver_id = 0;
    nlohmann::ordered_json effective_limits = nlohmann::ordered_json::object();
    std::string weights;  // f32, f16, q8_0, q4_0
    bool sustained = false;
    // Weight bytes one decoding step reads and the device's measured copy bandwidth: a tg
    // row's bandwidth fraction (steps/s * bytes / bandwidth).
    std::uint64_t bytes_read_per_step = 0;
    std::optional<double> bandwidth_gbps;
    // The largest relative logit error (max |gpu - ref| / max |ref| of a row) against the
    // float64 reference over check_tokens tokens; with sequences > 1, also the batched logits
    // against the same sequences run alone.
    std::optional<double> check_max_rel, batched_max_rel;
    std::uint32_t check_tokens = 0;
    double check_tolerance = 0.0;
    bool failed = false;
    std::string message;  // why it failed

    std::vector<double> samples_ts() const;  // tokens/s of each repetition, as llama-bench
    double avg_ts() const;
    double stddev_ts() const;
    std::optional<double> bandwidth_fraction() const;
};

// llama-bench's field names, in its order (get_fields()).
const std::vector<std::string>& llama_bench_fields();

// The row as llama-bench's -o json writes one: its fields, samples_ns and samples_ts, then
// vkformer's.
nlohmann::ordered_json row_json(const LlamaRow& row);

enum class LlamaFormat { Json, Jsonl, Csv, Md };
// The whole output in llama-bench's form of `format`.
std::string llama_output(const std::vector<LlamaRow>& rows, LlamaFormat format);

}  // namespace vkf::bench
