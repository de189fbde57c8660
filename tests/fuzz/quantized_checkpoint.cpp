// Fuzzes a quantized checkpoint's metadata and planes (host/quant/quantized_checkpoint.hpp),
// as vkf-run loads vkf-quantize's output: checkpoint_quantization, check_model_checkpoint
// against small BLOOM and MPT configurations, then read_quantized and read_weights_f32 (exact
// dequantization) of every tensor the configuration needs.
//
// The input is one safetensors file (model.safetensors), or two separated by the line
// "--shard--" (kShardDelimiter): two shards and an index naming each shard's tensors, so that
// shards whose metadata disagree are exercised too.

#include "host/quant/quantized_checkpoint.hpp"
#include "host/io/safetensors_writer.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using namespace vkf;

constexpr std::string_view kShardDelimiter = "\n--shard--\n";

// The configurations the seeds were written for (tests/fuzz/make_seeds.cpp): k = 32 and 128,
// multiples of the 32-weight block.
std::vector<ModelConfig> configs() {
    ModelConfig bloom{.family = ModelFamily::Bloom, .vocab_size = 8, .hidden = 32, .n_layer = 1, .n_head = 2};
    bloom.n_kv_head = 2;
    bloom.head_dim = 16;
    bloom.ffn_hidden = 128;
    ModelConfig mpt = bloom;
    mpt.family = ModelFamily::Mpt;
    mpt.no_bias = true;
    mpt.tie_word_embeddings = false;
    return {bloom, mpt};
}

void read_everything(const ShardedCheckpoint& checkpoint, const ModelConfig& config) {
    const QuantFormat format = check_model_checkpoint(checkpoint, config);
    std::uint64_t sum = 0;
    for (const ExpectedTensor& e : expected_tensors(config)) {
        // A matrix's own format (a metadata entry of its own, as GGUF mixes have) was checked.
        const QuantFormat own = quantized_role(e.role) ? tensor_quantization(checkpoint, e.name, format) : format;
        if (own != QuantFormat::None && !is_kquant(own) && quantized_role(e.role)) {
            const QuantizedTensorBytes q = read_quantized(checkpoint, e.name);
            fuzz::check(q.values.size() == e.shape[0] * quant_row_bytes(own, e.shape[1]),
                        "a checked values plane holds rows x row bytes");
            fuzz::check(q.scales.size() == e.shape[0] * quant_row_scales(e.shape[1]) * 2,
                        "a checked scales plane holds rows x blocks fp16 scales");
        }
        const std::vector<float> values = read_weights_f32(checkpoint, e, format);
        fuzz::check(values.size() == e.shape[0] * (e.shape.size() > 1 ? e.shape[1] : 1),
                    "read_weights_f32 returns every weight");
        sum += values.size();
        sum += tensor_bytes(e, WeightFormat{.dense = DType::F16, .quant = own});
    }
    fuzz::sink(sum);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const fs::path dir = fuzz::scratch_dir() / "quantized";
    static const std::vector<ModelConfig> kConfigs = configs();
    fs::create_directories(dir);
    const std::vector<std::string_view> parts = fuzz::split(fuzz::as_text(data, size), kShardDelimiter, 2);
    std::error_code ignored;
    fs::remove(dir / "model.safetensors", ignored);
    fs::remove(dir / "model.safetensors.index.json", ignored);
    if (parts.size() == 1) {
        fuzz::write_file(dir / "model.safetensors", parts[0]);
    } else {
        // The index lists each shard's tensors; a shard that does not open is left out of it.
        std::string weight_map;
        std::set<std::string> listed;  // a name in both shards is listed once (the first)
        for (std::size_t i = 0; i < parts.size(); ++i) {
            const std::string name = "model-0000" + std::to_string(i + 1) + "-of-00002.safetensors";
            fuzz::write_file(dir / name, parts[i]);
            fuzz::run_parser([&] {
                const SafetensorsFile shard = open_safetensors(dir / name);
                for (const TensorInfo& info : shard.tensors()) {
                    if (listed.insert(info.name).second) {
                        const nlohmann::json key = info.name;
                        weight_map += (weight_map.empty() ? "" : ", ") +
                                      key.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + ": \"" +
                                      name + "\"";
                    }
                }
            });
        }
        fuzz::write_file(dir / "model.safetensors.index.json", "{\"weight_map\": {" + weight_map + "}}");
    }
    fuzz::run_parser([&] {
        const ShardedCheckpoint checkpoint = open_checkpoint(dir);
        const QuantFormat format = checkpoint_quantization(checkpoint);
        fuzz::sink(static_cast<std::uint64_t>(format));
        for (const ModelConfig& config : kConfigs) {
            fuzz::run_parser([&] { read_everything(checkpoint, config); });
        }
    });
    return 0;
}
