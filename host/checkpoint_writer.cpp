#include "host/checkpoint_writer.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "host/half.hpp"
#include "runtime/error.hpp"
#include "runtime/json_writer.hpp"

namespace vkf {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kSingleFileName = "model.safetensors";
constexpr std::string_view kIndexFileName = "model.safetensors.index.json";
// Elements generated and written per step: bounds the memory a tensor of any size needs.
constexpr std::size_t kChunkElements = std::size_t{1} << 20;
// safetensors pads its header with spaces so that the data section starts 8-aligned.
constexpr std::size_t kHeaderAlignment = 8;

// SplitMix64's finalizer: a bijective mix, good enough to turn counters into
// independent-looking bits, and the same on every platform (unlike std distributions).
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

// How one tensor's values are drawn: value = offset + scale * U(-1, 1).
struct Distribution {
    float offset;
    float scale;
};

Distribution distribution_for(TensorRole role) {
    // Uniform on (-a, a) has standard deviation a / sqrt(3).
    const float std_002 = 0.02f * std::sqrt(3.0f);
    switch (role) {
        case TensorRole::Embedding:
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

struct PlannedTensor {
    ExpectedTensor expected;
    std::string file_name;  // with the "transformer." prefix
    std::uint64_t bytes = 0;
    int shard = 0;
};

std::uint64_t byte_count(const std::vector<std::size_t>& shape, std::size_t element_size) {
    std::uint64_t bytes = element_size;
    for (std::size_t dim : shape) {
        bytes *= dim;
    }
    return bytes;
}

// Contiguous runs of tensors, cut where the running total passes each 1/shards of the
// bytes, with at least one tensor per shard.
void assign_shards(std::vector<PlannedTensor>& tensors, int shards) {
    std::uint64_t total = 0;
    for (const PlannedTensor& tensor : tensors) {
        total += tensor.bytes;
    }
    int shard = 0;
    std::uint64_t written = 0;
    std::size_t in_shard = 0;
    for (std::size_t t = 0; t < tensors.size(); ++t) {
        const bool must_advance = in_shard > 0 && tensors.size() - t == static_cast<std::size_t>(shards - 1 - shard);
        const bool want_advance =
            in_shard > 0 && shard < shards - 1 &&
            written >= total / static_cast<std::uint64_t>(shards) * static_cast<std::uint64_t>(shard + 1);
        if (must_advance || want_advance) {
            ++shard;
            in_shard = 0;
        }
        tensors[t].shard = shard;
        written += tensors[t].bytes;
        ++in_shard;
    }
}

std::string shard_file_name(int shard, int shards) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", shard + 1, shards);
    return name;
}

std::string_view torch_dtype(SafetensorsDtype dtype) {
    switch (dtype) {
        case SafetensorsDtype::F32:
            return "float32";
        case SafetensorsDtype::F16:
            return "float16";
        case SafetensorsDtype::BF16:
            return "bfloat16";
        default:
            throw Error("checkpoint writer: dtype " + std::string(dtype_name(dtype)) + " is not one of F32, F16, BF16");
    }
}

// The safetensors header of one file: {"__metadata__": {"format": "pt"}, name: {...}, ...},
// padded with spaces to a multiple of 8 bytes.
std::string safetensors_header(std::span<const PlannedTensor* const> tensors, SafetensorsDtype dtype) {
    std::ostringstream text;
    JsonWriter json(text, JsonStyle::Compact);
    json.begin_object();
    json.key("__metadata__").begin_object().field("format", "pt").end_object();
    std::uint64_t offset = 0;
    for (const PlannedTensor* tensor : tensors) {
        json.key(tensor->file_name).begin_object();
        json.field("dtype", dtype_name(dtype));
        json.key("shape").begin_array();
        for (std::size_t dim : tensor->expected.shape) {
            json.value(dim);
        }
        json.end_array();
        json.key("data_offsets").begin_array().value(offset).value(offset + tensor->bytes).end_array();
        json.end_object();
        offset += tensor->bytes;
    }
    json.end_object();
    json.finish();
    std::string header = text.str();
    header.append((kHeaderAlignment - header.size() % kHeaderAlignment) % kHeaderAlignment, ' ');
    return header;
}

void store_le(std::byte* out, std::uint32_t value, std::size_t bytes) {
    for (std::size_t i = 0; i < bytes; ++i) {
        out[i] = static_cast<std::byte>((value >> (8 * i)) & 0xffu);
    }
}

// Generates the tensor's values chunk by chunk, converts them to `dtype` and writes them;
// after_chunk(bytes) follows every chunk.
template <class AfterChunk>
void write_tensor_data(std::ofstream& out, const PlannedTensor& tensor, std::uint64_t seed, SafetensorsDtype dtype,
                       AfterChunk&& after_chunk) {
    const Distribution distribution = distribution_for(tensor.expected.role);
    const std::uint64_t key = mix64(seed ^ mix64(hash_name(tensor.expected.name)));
    const std::size_t element_size = dtype_size(dtype);
    const std::uint64_t count = tensor.bytes / element_size;
    const auto capacity = static_cast<std::size_t>(std::min<std::uint64_t>(count, kChunkElements));
    std::vector<float> values(capacity);
    std::vector<std::uint16_t> halves(element_size == 2 ? capacity : 0);
    std::vector<std::byte> bytes(capacity * element_size);
    for (std::uint64_t first = 0; first < count; first += kChunkElements) {
        const auto chunk = static_cast<std::size_t>(std::min<std::uint64_t>(kChunkElements, count - first));
        const std::span<float> chunk_values(values.data(), chunk);
        for (std::size_t i = 0; i < chunk; ++i) {
            const std::uint64_t bits = mix64(key + (first + i) * 0x9e3779b97f4a7c15ull);
            chunk_values[i] = distribution.offset + distribution.scale * unit_uniform(bits);
        }
        if (dtype == SafetensorsDtype::F32) {
            for (std::size_t i = 0; i < chunk; ++i) {
                store_le(bytes.data() + 4 * i, std::bit_cast<std::uint32_t>(chunk_values[i]), 4);
            }
        } else {
            const std::span<std::uint16_t> chunk_halves(halves.data(), chunk);
            if (dtype == SafetensorsDtype::F16) {
                floats_to_halves(chunk_values, chunk_halves);
            } else {
                floats_to_bfloat16s(chunk_values, chunk_halves);
            }
            for (std::size_t i = 0; i < chunk; ++i) {
                store_le(bytes.data() + 2 * i, chunk_halves[i], 2);
            }
        }
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(chunk * element_size));
        after_chunk(chunk * element_size);
    }
}

void write_text_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) {
        throw Error("checkpoint writer: cannot open '" + path.string() + "' for writing");
    }
    out << text;
    out.close();
    if (!out) {
        throw Error("checkpoint writer: write error on '" + path.string() + "'");
    }
}

std::string index_json(std::span<const PlannedTensor> tensors, int shards) {
    std::uint64_t total = 0;
    std::map<std::string, std::string> weight_map;  // sorted by name, as transformers writes it
    for (const PlannedTensor& tensor : tensors) {
        total += tensor.bytes;
        weight_map.emplace(tensor.file_name, shard_file_name(tensor.shard, shards));
    }
    std::ostringstream text;
    JsonWriter json(text);
    json.begin_object();
    json.key("metadata").begin_object().field("total_size", total).end_object();
    json.key("weight_map").begin_object();
    for (const auto& [name, file] : weight_map) {
        json.field(name, file);
    }
    json.end_object().end_object();
    json.finish();
    return text.str() + "\n";
}

// expansion_ratio such that Python's int(expansion_ratio * d_model) == ffn_hidden.
double mpt_expansion_ratio(const ModelConfig& config) {
    double ratio = static_cast<double>(config.ffn_hidden) / config.hidden;
    for (int attempt = 0; attempt < 4; ++attempt) {
        if (std::trunc(ratio * config.hidden) == config.ffn_hidden) {
            return ratio;
        }
        ratio = std::nextafter(ratio, 1e300);
    }
    throw Error("checkpoint writer: MLP width " + std::to_string(config.ffn_hidden) +
                " cannot be written as an expansion_ratio of d_model " + std::to_string(config.hidden));
}

void write_bloom_config(JsonWriter& json, const ModelConfig& config, SafetensorsDtype dtype) {
    // transformers writes config.json with sorted keys; so do we.
    json.field("apply_residual_connection_post_layernorm", false);
    json.key("architectures").begin_array().value("BloomForCausalLM").end_array();
    json.field("attention_dropout", 0.0);
    json.field("attention_softmax_in_fp32", true);
    json.field("bias_dropout_fusion", true);
    if (config.vocab_size > 2) {
        json.field("bos_token_id", 1);
        json.field("eos_token_id", 2);
    }
    json.field("hidden_dropout", 0.0);
    json.field("hidden_size", config.hidden);
    json.field("initializer_range", 0.02);
    json.field("layer_norm_epsilon", config.layer_norm_epsilon);
    json.field("masked_softmax_fusion", true);
    json.field("model_type", "bloom");
    json.field("n_head", config.n_head);
    json.key("n_inner").null();
    json.field("n_layer", config.n_layer);
    json.field("offset_alibi", 100);
    if (config.vocab_size > 3) {
        json.field("pad_token_id", 3);
    }
    json.field("pretraining_tp", 1);
    if (config.max_seq_len != 2048) {
        json.field("seq_length", config.max_seq_len);
    }
    json.field("skip_bias_add", true);
    json.field("skip_bias_add_qkv", false);
    json.field("slow_but_exact", false);
    if (!config.tie_word_embeddings) {
        json.field("tie_word_embeddings", false);
    }
    json.field("torch_dtype", torch_dtype(dtype));
    json.field("unk_token_id", 0);
    json.field("use_cache", true);
    json.field("vocab_size", config.vocab_size);
}

void write_mpt_config(JsonWriter& json, const ModelConfig& config, SafetensorsDtype dtype) {
    json.key("architectures").begin_array().value("MPTForCausalLM").end_array();
    json.key("attn_config").begin_object();
    json.field("alibi", true);
    json.field("alibi_bias_max", config.alibi_bias_max);
    json.field("attn_impl", "torch");
    json.field("attn_pdrop", 0);
    json.field("attn_type", "multihead_attention");
    json.field("attn_uses_sequence_id", false);
    if (config.clip_qkv) {
        json.field("clip_qkv", *config.clip_qkv);
    } else {
        json.key("clip_qkv").null();
    }
    json.field("prefix_lm", false);
    json.field("qk_ln", false);
    json.key("softmax_scale").null();
    json.end_object();
    json.field("d_model", config.hidden);
    json.field("emb_pdrop", 0);
    json.field("embedding_fraction", 1.0);
    if (config.ffn_hidden % config.hidden == 0) {
        json.field("expansion_ratio", config.ffn_hidden / config.hidden);
    } else {
        json.field("expansion_ratio", mpt_expansion_ratio(config));
    }
    json.key("init_config").begin_object();
    json.key("emb_init_std").null();
    json.key("emb_init_uniform_lim").null();
    json.field("fan_mode", "fan_in");
    json.field("init_div_is_residual", true);
    json.field("init_gain", 0);
    json.field("init_nonlinearity", "relu");
    json.field("init_std", 0.02);
    json.field("name", "kaiming_normal_");
    json.field("verbose", 0);
    json.end_object();
    json.field("init_device", "cpu");
    if (config.layer_norm_epsilon != 1e-5) {
        json.field("layer_norm_epsilon", config.layer_norm_epsilon);
    }
    json.field("learned_pos_emb", true);
    json.key("logit_scale").null();
    json.field("max_seq_len", config.max_seq_len);
    json.field("model_type", "mpt");
    json.field("n_heads", config.n_head);
    json.field("n_layers", config.n_layer);
    json.field("no_bias", config.no_bias);
    json.field("norm_type", "low_precision_layernorm");
    json.field("resid_pdrop", 0);
    if (!config.tie_word_embeddings) {
        json.field("tie_word_embeddings", false);
    }
    json.field("torch_dtype", torch_dtype(dtype));
    json.field("use_cache", false);
    json.field("verbose", 0);
    json.field("vocab_size", config.vocab_size);
}

}  // namespace

std::string hf_config_json(const ModelConfig& config, SafetensorsDtype dtype) {
    validate(config);
    std::ostringstream text;
    JsonWriter json(text);
    json.begin_object();
    if (config.family == ModelFamily::Bloom) {
        write_bloom_config(json, config, dtype);
    } else {
        write_mpt_config(json, config, dtype);
    }
    json.end_object();
    json.finish();
    return text.str() + "\n";
}

void write_random_checkpoint(const fs::path& dir, const ModelConfig& config, std::uint64_t seed, SafetensorsDtype dtype,
                             int shards, const CheckpointProgressCallback& progress) {
    torch_dtype(dtype);  // refuses dtypes other than F32, F16 and BF16
    std::vector<PlannedTensor> tensors;
    for (ExpectedTensor& expected : expected_tensors(config)) {
        const std::uint64_t bytes = byte_count(expected.shape, dtype_size(dtype));
        std::string file_name = checkpoint_tensor_name(expected.name);
        tensors.push_back(
            PlannedTensor{.expected = std::move(expected), .file_name = std::move(file_name), .bytes = bytes});
    }
    if (shards < 1 || static_cast<std::size_t>(shards) > tensors.size()) {
        throw Error("checkpoint writer: " + std::to_string(shards) + " shards requested; between 1 and " +
                    std::to_string(tensors.size()) + " (the number of tensors) are possible");
    }
    assign_shards(tensors, shards);

    std::error_code error;
    fs::create_directories(dir, error);
    if (error) {
        throw Error("checkpoint writer: cannot create directory '" + dir.string() + "': " + error.message());
    }
    fs::remove(dir / (shards == 1 ? kIndexFileName : kSingleFileName), error);
    write_text_file(dir / "config.json", hf_config_json(config, dtype));

    std::uint64_t total_bytes = 0;
    for (const PlannedTensor& tensor : tensors) {
        total_bytes += tensor.bytes;
    }
    std::uint64_t bytes_done = 0;
    std::size_t tensors_done = 0;
    for (int shard = 0; shard < shards; ++shard) {
        std::vector<const PlannedTensor*> members;
        for (const PlannedTensor& tensor : tensors) {
            if (tensor.shard == shard) {
                members.push_back(&tensor);
            }
        }
        const fs::path path = dir / (shards == 1 ? std::string(kSingleFileName) : shard_file_name(shard, shards));
        const std::string header = safetensors_header(members, dtype);
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        if (!out) {
            throw Error("checkpoint writer: cannot open '" + path.string() + "' for writing");
        }
        std::byte length[8];
        for (std::size_t i = 0; i < 8; ++i) {
            length[i] = static_cast<std::byte>((static_cast<std::uint64_t>(header.size()) >> (8 * i)) & 0xffu);
        }
        out.write(reinterpret_cast<const char*>(length), sizeof length);
        out.write(header.data(), static_cast<std::streamsize>(header.size()));
        for (const PlannedTensor* tensor : members) {
            const auto report = [&] {
                if (progress) {
                    progress(CheckpointWriteProgress{.tensor = tensor->file_name,
                                                     .tensors_done = tensors_done,
                                                     .tensor_count = tensors.size(),
                                                     .bytes_done = bytes_done,
                                                     .total_bytes = total_bytes});
                }
            };
            const std::uint64_t tensor_end = bytes_done + tensor->bytes;
            write_tensor_data(out, *tensor, seed, dtype, [&](std::uint64_t chunk_bytes) {
                bytes_done += chunk_bytes;
                if (bytes_done < tensor_end) {
                    report();  // inside a large tensor
                }
            });
            if (!out) {
                throw Error("checkpoint writer: write error on '" + path.string() + "' in tensor '" +
                            tensor->file_name + "'");
            }
            ++tensors_done;
            report();
        }
        out.close();
        if (!out) {
            throw Error("checkpoint writer: write error on '" + path.string() + "'");
        }
    }
    if (shards > 1) {
        write_text_file(dir / kIndexFileName, index_json(tensors, shards));
    }
}

}  // namespace vkf
