#include "host/quant/gguf_model_writer.hpp"

#include "base/error.hpp"
#include "host/io/gguf_keys.hpp"
#include "host/io/gguf_writer.hpp"
#include "host/quant/gguf_family_keys.hpp"
#include "host/quant/gguf_vocab_writer.hpp"
#include "host/quant/quantized_checkpoint.hpp"
#include "host/spec/gguf_checkpoint.hpp"
#include "host/spec/model_tensors.hpp"
#include "host/spec/refact_layout.hpp"
#include "host/util/endian.hpp"
#include "host/util/half.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>

namespace vkf {
namespace {

namespace fs = std::filesystem;

// llama.cpp's tensor names (gguf-py's TENSOR_NAMES) that vkformer's families can have; which
// Hugging Face tensor each one is comes from the GGUF reader (gguf_tensor_name), so the two
// directions cannot disagree.
constexpr std::string_view kWholeNames[] = {"token_embd", "position_embd", "token_embd_norm", "output_norm", "output"};
constexpr std::string_view kBlockNames[] = {"attn_norm", "attn_qkv",    "attn_q",      "attn_k",
                                            "attn_v",    "attn_q_norm", "attn_k_norm", "attn_output",
                                            "ffn_norm",  "ffn_up",      "ffn_gate",    "ffn_down"};
// conversion/base.py keeps these matrices F32 whatever the output type (POS_EMBD).
constexpr std::string_view kAlwaysF32 = "position_embd.weight";

std::string strip_prefix(std::string_view name) {
    return std::string(name.starts_with(kTransformerPrefix) ? name.substr(kTransformerPrefix.size()) : name);
}

// llama.cpp's names of every Hugging Face tensor of the family (several where the converter
// splits it: Baichuan's W_pack, Refact's q and kv), with the reader's row order and parts.
using LlamaNames = std::map<std::string, std::vector<std::pair<std::string, GgufTensorName>>>;
LlamaNames llama_names(const ModelConfig& config) {
    LlamaNames by_hf;
    const auto add = [&](const std::string& gguf) {
        if (std::optional<GgufTensorName> hf = gguf_tensor_name(config, gguf)) {
            // The reader takes Baichuan's W_pack whole (attn_qkv) or split; the converter splits it.
            auto& parts = by_hf[strip_prefix(hf->name)];
            if (!parts.empty() && parts.front().second.parts > hf->parts) {
                return;
            }
            if (!parts.empty() && parts.front().second.parts < hf->parts) {
                parts.clear();
            }
            parts.emplace_back(gguf, *hf);
            std::ranges::sort(parts, {}, [](const auto& part) { return part.second.part; });
        }
    };
    for (const std::string_view suffix : {".weight", ".bias"}) {
        for (const std::string_view name : kWholeNames) {
            add(fmt::format("{}{}", name, suffix));
        }
        for (std::uint32_t layer = 0; layer < config.n_layer; ++layer) {
            for (const std::string_view name : kBlockNames) {
                add(fmt::format("blk.{}.{}{}", layer, name, suffix));
            }
        }
    }
    return by_hf;
}

GgmlType ggml_type(GgufMatrixType type) {
    switch (type) {
        case GgufMatrixType::F32:
            return GgmlType::F32;
        case GgufMatrixType::F16:
            return GgmlType::F16;
        case GgufMatrixType::Q8_0:
            return GgmlType::Q8_0;
        case GgufMatrixType::Q4_0:
            return GgmlType::Q4_0;
    }
    return GgmlType::F32;
}

gguf_key::FileType file_type(GgufMatrixType type) {
    switch (type) {
        case GgufMatrixType::F32:
            return gguf_key::FileType::AllF32;
        case GgufMatrixType::F16:
            return gguf_key::FileType::MostlyF16;
        case GgufMatrixType::Q8_0:
            return gguf_key::FileType::MostlyQ8_0;
        case GgufMatrixType::Q4_0:
            return gguf_key::FileType::MostlyQ4_0;
    }
    return gguf_key::FileType::AllF32;
}

// Rows of fp32 values as `type` stores them: F32, F16 (refusing values beyond fp16), or ggml's
// blocks of vkformer's q8_0 / q4_0 (fp16 d, then the block's values plane bytes).
void encode_rows(GgmlType type, std::span<const float> values, std::uint64_t rows, std::uint64_t k,
                 std::span<std::byte> out, const std::string& name) {
    if (type == GgmlType::F32) {
        for (std::size_t i = 0; i < values.size(); ++i) {
            store_le(out.data() + 4 * i, std::bit_cast<std::uint32_t>(values[i]));
        }
        return;
    }
    if (type == GgmlType::F16) {
        const std::vector<std::uint16_t> halves = floats_to_halves(values);
        if (const std::optional<std::size_t> i = first_half_overflow(values, halves)) {
            throw Error(fmt::format("tensor '{}': element {} ({:f}) does not fit fp16", name, *i, values[*i]));
        }
        for (std::size_t i = 0; i < halves.size(); ++i) {
            store_le(out.data() + 2 * i, halves[i]);
        }
        return;
    }
    const QuantFormat format = type == GgmlType::Q8_0 ? QuantFormat::Q8_0 : QuantFormat::Q4_0;
    const std::uint64_t row_bytes = quant_row_bytes(format, k, name);
    const std::uint64_t blocks = quant_row_scales(k, name);
    const std::uint64_t block_values = row_bytes / blocks;
    std::vector<std::uint8_t> plane(row_bytes);
    std::vector<std::uint16_t> scales(blocks);
    std::byte* at = out.data();
    for (std::uint64_t r = 0; r < rows; ++r) {
        quantize_row(format, values.subspan(r * k, k), plane, scales, fmt::format("tensor '{}' row {}", name, r));
        for (std::uint64_t b = 0; b < blocks; ++b) {
            store_le(at, scales[b]);
            std::memcpy(at + 2, plane.data() + b * block_values, block_values);
            at += 2 + block_values;
        }
    }
}

// gguf-py's size_label (utility.py model_weight_count_rounded_notation, two digits at least):
// "4.2M", "560M", "1.1B". std::nearbyint rounds half to even, as Python's round().
std::string size_label(std::uint64_t parameters) {
    const auto count = static_cast<double>(parameters);
    const auto [scaled, suffix] = count > 1e12  ? std::pair{count * 1e-12, 'T'}
                                  : count > 1e9 ? std::pair{count * 1e-9, 'B'}
                                  : count > 1e6 ? std::pair{count * 1e-6, 'M'}
                                                : std::pair{count * 1e-3, 'K'};
    std::string whole = fmt::format("{:.0f}", std::nearbyint(scaled));
    whole.erase(0, whole.find_first_not_of('0') == std::string::npos ? whole.size() : whole.find_first_not_of('0'));
    const int fix = std::max(2 - static_cast<int>(whole.size()), 0);
    return fmt::format("{:.{}f}{}", scaled, fix, suffix);
}

// The GGUF tensor `gguf_name` of the family tensor `e`: the whole tensor, or where the converter
// split it, part `mapping.part` of its stored rows ([q | k | v]), in the converter's row order.
// `scale` multiplies every value (conversion/jais.py's muP scales, in float32 as numpy does);
// a tensor the family stores [in, out] (Jais' Conv1D) is written [out, in], as jais.py transposes it.
GgufTensorSource tensor_source(const ModelConfig& config, const ExpectedTensor& e, const CheckpointTensor& source,
                               const std::string& gguf_name, const GgufTensorName& mapping, GgufMatrixType type,
                               float scale = 1.0F) {
    const bool matrix = e.shape.size() == 2 && quantized_role(e.role) && gguf_name != kAlwaysF32;
    const GgmlType tensor_type = matrix ? ggml_type(type) : GgmlType::F32;
    const std::uint64_t k = e.shape.back();
    if (matrix && (tensor_type == GgmlType::Q8_0 || tensor_type == GgmlType::Q4_0)) {
        quant_row_bytes(QuantFormat::Q8_0, k, fmt::format("tensor '{}'", e.name));  // refuses k % 32 != 0
    }
    const bool is_vector = e.shape.size() == 1;
    if (mapping.parts > 1 && is_vector) {
        throw Error(fmt::format("tensor '{}': llama.cpp splits no bias of this architecture", e.name));
    }
    // The rows of this part within the stored rows: equal parts unless part_rows says.
    std::uint64_t first_stored = 0, part_rows = e.shape.front();
    if (mapping.parts > 1) {
        std::vector<std::uint64_t> rows = mapping.part_rows;
        if (rows.empty()) {
            rows.assign(mapping.parts, e.shape.front() / mapping.parts);
        }
        for (std::uint32_t p = 0; p < mapping.part; ++p) {
            first_stored += rows.at(p);
        }
        part_rows = rows.at(mapping.part);
    }
    // The reader's row_order maps each family row to its stored row; the writer needs the
    // reverse: the family row each stored row holds.
    std::vector<std::uint32_t> family_row;
    if (mapping.row_order != nullptr) {
        const std::vector<std::uint32_t> order = mapping.row_order(config);
        family_row.resize(order.size());
        for (std::uint32_t r = 0; r < order.size(); ++r) {
            family_row.at(order[r]) = r;
        }
    }
    const std::uint64_t row_elements = k;  // a 1-D tensor is one row
    std::vector<std::uint64_t> dims(e.shape.rbegin(), e.shape.rend());
    if (!is_vector) {
        dims.back() = part_rows;
    }
    return GgufTensorSource{
        .name = gguf_name,
        .dims = dims,
        .type = tensor_type,
        .fill = [&source, family_row = std::move(family_row), first_stored, row_elements, tensor_type,
                 gguf_name = gguf_name, is_vector, scale, transposed = e.transposed && !is_vector,
                 out_rows = e.shape.front()](std::uint64_t first, std::uint64_t rows, std::span<std::byte> out) {
            const DType dtype = source.info->dtype;
            const std::uint64_t row_raw = row_elements * element_size(dtype);
            std::vector<std::byte> raw(rows * row_raw);
            if (transposed) {  // stored [in, out]: the band's columns of each stored row
                const std::uint64_t size = element_size(dtype), part = rows * size;
                for (std::uint64_t i = 0; i < row_elements; ++i) {
                    source.file->read_raw_into(*source.info, (i * out_rows + first) * size,
                                               std::span(raw).subspan(i * part, part));
                }
            } else if (family_row.empty() || is_vector) {
                source.file->read_raw_into(*source.info, (first_stored + first) * row_raw, raw);
            } else {
                for (std::uint64_t r = 0; r < rows; ++r) {
                    source.file->read_raw_into(*source.info, family_row.at(first_stored + first + r) * row_raw,
                                               std::span(raw).subspan(r * row_raw, row_raw));
                }
            }
            std::vector<float> values(rows * row_elements);
            convert_to_f32(dtype, raw, values);
            if (transposed) {  // [in, rows] -> [rows, in]
                const std::vector<float> columns = values;
                for (std::uint64_t i = 0; i < row_elements; ++i) {
                    for (std::uint64_t r = 0; r < rows; ++r) {
                        values[r * row_elements + i] = columns[i * rows + r];
                    }
                }
            }
            if (scale != 1.0F) {
                for (float& v : values) {
                    v *= scale;
                }
            }
            if (is_vector && !family_row.empty()) {  // a fused QKV bias: one "row" per element
                const std::vector<float> family = values;
                for (std::size_t i = 0; i < values.size(); ++i) {
                    values[i] = family.at(family_row.at(i));
                }
            }
            encode_rows(tensor_type, values, rows, row_elements, out, gguf_name);
        }};
}

}  // namespace

std::string_view to_string(GgufMatrixType type) {
    switch (type) {
        case GgufMatrixType::F32:
            return "f32";
        case GgufMatrixType::F16:
            return "f16";
        case GgufMatrixType::Q8_0:
            return "q8_0";
        case GgufMatrixType::Q4_0:
            return "q4_0";
    }
    return "?";
}

void write_gguf_model(const fs::path& model_dir, const fs::path& out_file, GgufMatrixType type,
                      const CheckpointProgressCallback& progress) {
    const ShardedCheckpoint checkpoint = with_refact_layout(open_checkpoint(model_dir));
    const ModelConfig config = resolve_with_checkpoint(read_model_config(model_dir), checkpoint);
    validate(config);
    const std::string_view arch = gguf_written_architecture(config.family);
    if (const QuantFormat already = checkpoint_quantization(checkpoint); already != QuantFormat::None) {
        throw Error(
            fmt::format("checkpoint '{}' is already quantized ({}); convert the fp32/fp16/bf16 original instead",
                        checkpoint.source().string(), to_string(already)));
    }
    check_checkpoint(checkpoint, config);
    const fs::path dir = fs::is_directory(model_dir) ? model_dir : model_dir.parent_path();

    std::vector<GgufKeyValue> metadata;
    const auto put = [&](std::string key, GgufValue value) { metadata.push_back({std::move(key), std::move(value)}); };
    put(std::string(gguf_key::kArchitecture), gguf_string(std::string(arch)));
    put(std::string(gguf_key::kType), gguf_string("model"));
    fs::path named = fs::absolute(dir).lexically_normal();
    named = named.filename().empty() ? named.parent_path() : named;  // "models/x/" names x
    put(std::string(gguf_key::kName), gguf_string(named.filename().string()));
    std::uint64_t parameters = 0;
    for (const ExpectedTensor& e : expected_tensors(config)) {
        std::uint64_t elements = 1;
        for (const std::size_t d : e.shape) {
            elements *= d;
        }
        parameters += elements;
    }
    put(std::string(gguf_key::kSizeLabel), gguf_string(size_label(parameters)));
    for (GgufKeyValue& kv : gguf_family_parameters(dir, config)) {
        metadata.push_back(std::move(kv));
    }
    put(std::string(gguf_key::kFileType), gguf_uint32(static_cast<std::uint32_t>(file_type(type))));
    put(std::string(gguf_key::kQuantizationVersionKey), gguf_uint32(gguf_key::kQuantizationVersion));
    for (GgufKeyValue& kv : gguf_tokenizer_metadata(dir, config.vocab_size)) {
        metadata.push_back(std::move(kv));
    }

    const auto names = llama_names(config);
    std::vector<GgufTensorSource> tensors;
    for (const ExpectedTensor& e : expected_tensors(config)) {
        const auto found = names.find(strip_prefix(e.name));
        if (found == names.end()) {
            throw Error(fmt::format("tensor '{}' has no llama.cpp name in the '{}' architecture", e.name, arch));
        }
        for (const auto& [gguf_name, mapping] : found->second) {
            float scale = 1.0F;
            if (config.family == ModelFamily::Jais && gguf_name == "token_embd.weight") {
                scale = static_cast<float>(config.embedding_scale);
            } else if (config.family == ModelFamily::Jais && gguf_name == "output.weight") {
                scale = static_cast<float>(config.logit_scale.value_or(1.0));
            }
            tensors.push_back(tensor_source(config, e, checkpoint.at(e.name), gguf_name, mapping, type, scale));
            // conversion/jais.py reads transformers' state_dict, which holds the tied LM head, and
            // llama.cpp's jais needs it: the embedding again, scaled by the muP width scale.
            if (config.family == ModelFamily::Jais && config.tie_word_embeddings && gguf_name == "token_embd.weight") {
                tensors.push_back(tensor_source(config, e, checkpoint.at(e.name), "output.weight", mapping, type,
                                                static_cast<float>(config.logit_scale.value_or(1.0))));
            }
        }
    }
    write_gguf_file(out_file, metadata, tensors, progress);
}

}  // namespace vkf
