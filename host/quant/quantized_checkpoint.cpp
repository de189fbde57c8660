#include "host/quant/quantized_checkpoint.hpp"

#include "host/quant/kquant_format.hpp"
#include "host/spec/refact_layout.hpp"

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/format.hpp"
#include "host/util/endian.hpp"
#include "host/util/half.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <optional>

namespace vkf {

namespace {

namespace fs = std::filesystem;

std::string where(const CheckpointTensor& t) {
    return t.file->label() + ": tensor '" + t.info->name + "': ";
}

// The format one file's metadata names; nullopt when it names none.
std::optional<QuantFormat> file_quantization(const TensorFile& file) {
    const auto& meta = file.metadata();
    const auto format = meta.find(std::string(kQuantFormatKey));
    const auto version = meta.find(std::string(kQuantVersionKey));
    const std::string label = file.label() + ": ";
    if (format == meta.end()) {
        if (version != meta.end()) {
            throw Error(label + "metadata has " + std::string(kQuantVersionKey) + " but no " +
                        std::string(kQuantFormatKey));
        }
        return std::nullopt;
    }
    const std::optional<QuantFormat> parsed = parse_stored_quant_format(format->second);
    if (!parsed) {
        throw Error(label + "unknown quantization format '" + format->second +
                    "' (this vkformer reads q8_0, q4_0 and, from GGUF files, q4_1, q5_0, q5_1 and q2_K .. q6_K)");
    }
    if (version == meta.end()) {
        throw Error(label + "quantized as " + format->second + " but its metadata has no " +
                    std::string(kQuantVersionKey));
    }
    if (version->second != fmt::to_string(kQuantFormatVersion)) {
        throw Error(label + "quantization format version '" + version->second + "' is not one this vkformer reads (" +
                    fmt::to_string(kQuantFormatVersion) + "); re-quantize the model with this vkformer's vkf-quantize");
    }
    return parsed;
}

}  // namespace

bool quantized_role(TensorRole role) {
    return role == TensorRole::Embedding || role == TensorRole::LinearWeight;
}

std::uint64_t tensor_bytes(const ExpectedTensor& tensor, WeightFormat format) {
    if (is_kquant(format.quant) && quantized_role(tensor.role)) {
        return tensor.shape.at(0) * kquant_row_bytes(kquant_ggml_type(format.quant), tensor.shape.at(1), tensor.name);
    }
    if (format.quant != QuantFormat::None && quantized_role(tensor.role)) {
        return quant_matrix_bytes(format.quant, tensor.shape.at(0), tensor.shape.at(1));
    }
    std::uint64_t elements = 1;
    for (const std::size_t d : tensor.shape) {
        elements *= d;
    }
    return elements * element_size(format.dense);
}

QuantFormat checkpoint_quantization(const ShardedCheckpoint& checkpoint) {
    std::optional<std::optional<QuantFormat>> seen;
    const TensorFile* first = nullptr;
    for (const auto& file : checkpoint.files()) {
        const std::optional<QuantFormat> f = file_quantization(*file);
        if (seen && *seen != f) {
            throw Error("checkpoint '" + checkpoint.source().string() + "': shard '" + file->path().string() + "' is " +
                        (f ? to_string(*f) : "not quantized") + " but '" + first->path().string() + "' is " +
                        (*seen ? to_string(**seen) : "not quantized"));
        }
        seen = f;
        first = first ? first : file.get();
    }
    return seen && *seen ? **seen : QuantFormat::None;
}

QuantFormat tensor_quantization(const ShardedCheckpoint& checkpoint, std::string_view name,
                                QuantFormat checkpoint_format) {
    const CheckpointTensor* t = checkpoint.find(name);
    if (checkpoint_format == QuantFormat::None || t == nullptr) {
        return checkpoint_format;
    }
    const auto& meta = t->file->metadata();
    const auto own = meta.find(fmt::format("{}{}", kTensorQuantPrefix, name));
    if (own == meta.end()) {
        return checkpoint_format;
    }
    const std::optional<QuantFormat> parsed = parse_stored_quant_format(own->second);
    if (!parsed || *parsed == QuantFormat::None) {
        throw Error(
            fmt::format("{}: tensor '{}': unknown quantization format '{}'", t->file->label(), name, own->second));
    }
    return *parsed;
}

QuantFormat check_model_checkpoint(const ShardedCheckpoint& checkpoint, const ModelConfig& config) {
    const QuantFormat checkpoint_format = checkpoint_quantization(checkpoint);
    QuantFormat format = checkpoint_format;
    if (format == QuantFormat::None) {
        check_checkpoint(checkpoint, config);
        return format;
    }
    std::vector<std::string> problems;
    const auto check = [&](const std::string& name, DType dtype, const std::vector<std::size_t>& shape,
                           bool any_float) {
        const CheckpointTensor* t = checkpoint.find(name);
        if (t == nullptr) {
            problems.push_back("tensor '" + name + "' (" + shape_text(shape) + ") is missing from every file");
            return;
        }
        if (t->info->shape != shape) {
            problems.push_back(where(*t) + "shape " + shape_text(t->info->shape) + " but the config (" +
                               std::string(to_string(format)) + ") needs " + shape_text(shape));
        }
        if (any_float ? !is_supported_float(t->info->dtype) : t->info->dtype != dtype) {
            problems.push_back(where(*t) + "dtype " + std::string(dtype_name(t->info->dtype)) + " but " +
                               (any_float ? std::string("F32, F16 or BF16") : std::string(dtype_name(dtype))) +
                               " is needed");
        }
    };
    for (const ExpectedTensor& e : expected_tensors(config)) {
        format = checkpoint_format;
        if (!quantized_role(e.role)) {
            check(e.name, DType::F16, e.shape, true);
            continue;
        }
        const std::size_t rows = e.shape.at(0), k = e.shape.at(1);
        format = tensor_quantization(checkpoint, e.name, checkpoint_format);
        if (is_kquant(format)) {
            // GGUF's super-blocks as stored, scales inside: one tensor.
            const std::uint32_t block = kquant_block_weights(kquant_ggml_type(format));
            if (k % block != 0) {
                problems.push_back(fmt::format("tensor '{}': rows of {} weights cannot be {} (not a multiple of {})",
                                               e.name, k, to_string(format), block));
                continue;
            }
            check(e.name, DType::U8, {rows, static_cast<std::size_t>(kquant_row_bytes(kquant_ggml_type(format), k))},
                  false);
            continue;
        }
        if (k % kQuantBlock != 0) {
            problems.push_back("tensor '" + e.name + "': rows of " + fmt::to_string(k) +
                               " weights cannot be block-quantized (not a multiple of 32)");
            continue;
        }
        check(e.name, DType::U8, {rows, static_cast<std::size_t>(quant_row_bytes(format, k))}, false);
        check(e.name + std::string(kScalesSuffix), DType::F16, {rows, k / kQuantBlock}, false);
    }
    throw_if_problems("quantized (" + std::string(to_string(checkpoint_format)) + ") checkpoint '" +
                          checkpoint.source().string() + "'",
                      config, problems);
    return checkpoint_format;
}

QuantizedTensorBytes read_quantized(const ShardedCheckpoint& checkpoint, std::string_view name) {
    return QuantizedTensorBytes{.values = checkpoint.read_raw(name),
                                .scales = checkpoint.read_raw(std::string(name) + std::string(kScalesSuffix))};
}

std::vector<float> read_weights_f32(const ShardedCheckpoint& checkpoint, const ExpectedTensor& tensor,
                                    QuantFormat format) {
    if (format == QuantFormat::None || !quantized_role(tensor.role)) {
        return read_tensor_f32(checkpoint, tensor);
    }
    format = tensor_quantization(checkpoint, tensor.name, format);
    const std::size_t rows = tensor.shape.at(0), k = tensor.shape.at(1);
    if (is_kquant(format)) {
        const GgmlType type = kquant_ggml_type(format);
        const std::uint64_t row_bytes = kquant_row_bytes(type, k, tensor.name);
        const std::vector<std::byte> raw = checkpoint.read_raw(tensor.name);
        if (raw.size() != rows * row_bytes) {
            throw Error(fmt::format("checkpoint '{}': tensor '{}' does not hold a {} {} matrix",
                                    checkpoint.source().string(), tensor.name, shape_text(tensor.shape),
                                    to_string(format)));
        }
        std::vector<float> out(rows * k);
        const auto* bytes = reinterpret_cast<const std::uint8_t*>(raw.data());
        for (std::size_t r = 0; r < rows; ++r) {
            dequantize_kquant_row(type, std::span(bytes + r * row_bytes, row_bytes), std::span(out).subspan(r * k, k));
        }
        return out;
    }
    const QuantizedTensorBytes q = read_quantized(checkpoint, tensor.name);
    const std::uint64_t row_bytes = quant_row_bytes(format, k, tensor.name);
    const std::uint64_t row_scales = quant_row_scales(k, tensor.name);
    if (q.values.size() != rows * row_bytes || q.scales.size() != rows * row_scales * 2) {
        throw Error("checkpoint '" + checkpoint.source().string() + "': tensor '" + tensor.name +
                    "': its planes do not hold a " + shape_text(tensor.shape) + " " + to_string(format) + " matrix");
    }
    std::vector<std::uint16_t> scales(rows * row_scales);
    for (std::size_t i = 0; i < scales.size(); ++i) {
        scales[i] = load_le<std::uint16_t>(q.scales.data() + 2 * i);
    }
    const auto* values = reinterpret_cast<const std::uint8_t*>(q.values.data());
    return dequantize_matrix(format, std::span(values, q.values.size()), scales, rows, k);
}

std::vector<float> dequantize_matrix(QuantFormat format, std::span<const std::uint8_t> values,
                                     std::span<const std::uint16_t> scales, std::uint64_t rows, std::uint64_t k) {
    const std::uint64_t row_bytes = quant_row_bytes(format, k);
    const std::uint64_t row_scales = quant_row_scales(k);
    if (values.size() != rows * row_bytes || scales.size() != rows * row_scales) {
        throw Error("dequantize_matrix: " + fmt::to_string(values.size()) + " value bytes and " +
                    fmt::to_string(scales.size()) + " scales do not make " + fmt::to_string(rows) + " " +
                    to_string(format) + " rows of " + fmt::to_string(k));
    }
    std::vector<float> out(rows * k);
    for (std::uint64_t r = 0; r < rows; ++r) {
        dequantize_row(format, values.subspan(r * row_bytes, row_bytes), scales.subspan(r * row_scales, row_scales),
                       std::span(out).subspan(r * k, k));
    }
    return out;
}

QuantizedMatrix quantize_matrix(QuantFormat format, std::span<const float> weights, std::uint64_t rows, std::uint64_t k,
                                std::string_view what) {
    const std::uint64_t row_bytes = quant_row_bytes(format, k, what);
    const std::uint64_t row_scales = quant_row_scales(k, what);
    if (weights.size() != rows * k) {
        throw Error(std::string(what) + ": " + fmt::to_string(weights.size()) + " weights do not make " +
                    fmt::to_string(rows) + " rows of " + fmt::to_string(k));
    }
    QuantizedMatrix q{std::vector<std::uint8_t>(rows * row_bytes), std::vector<std::uint16_t>(rows * row_scales)};
    for (std::uint64_t r = 0; r < rows; ++r) {
        quantize_row(format, weights.subspan(r * k, k), std::span(q.values).subspan(r * row_bytes, row_bytes),
                     std::span(q.scales).subspan(r * row_scales, row_scales),
                     std::string(what) + " row " + fmt::to_string(r));
    }
    return q;
}

void write_quantized_checkpoint(const fs::path& model_dir, const fs::path& out_dir, QuantFormat format,
                                const CheckpointProgressCallback& progress) {
    if (format == QuantFormat::None) {
        throw Error("vkf-quantize: no block format given");
    }
    // A Hugging Face Refact checkpoint's fused tensors are written under the slots' names.
    const ShardedCheckpoint checkpoint = with_refact_layout(open_checkpoint(model_dir));
    const ModelConfig config = resolve_with_checkpoint(read_model_config(model_dir), checkpoint);
    validate(config);
    const QuantFormat already = checkpoint_quantization(checkpoint);
    if (already != QuantFormat::None) {
        throw Error("checkpoint '" + checkpoint.source().string() + "' is already quantized (" + to_string(already) +
                    "); quantize the fp32/fp16/bf16 original instead");
    }
    check_checkpoint(checkpoint, config);
    for (const ExpectedTensor& e : expected_tensors(config)) {
        if (quantized_role(e.role)) {
            quant_row_bytes(format, e.shape.at(1), "tensor '" + e.name + "'");  // refuses k % 32 != 0 up front
        }
    }

    // The values plane is written first: it quantizes the matrix and keeps the scales for the
    // .scales tensor that follows it.
    auto last = std::make_shared<QuantizedMatrix>();
    std::vector<RawTensorSource> sources;
    for (const ExpectedTensor& e : expected_tensors(config)) {
        const std::string name = checkpoint.tensor_info(e.name).name;  // as the original spells it
        if (!quantized_role(e.role)) {
            sources.push_back(RawTensorSource{
                .name = name,
                .dtype = DType::F16,
                .shape = e.shape,
                .bytes = [&checkpoint, e](std::span<std::byte> out) {
                    const std::vector<float> values = read_tensor_f32(checkpoint, e);
                    const std::vector<std::uint16_t> halves = floats_to_halves(values);
                    if (const std::optional<std::size_t> i = first_half_overflow(values, halves)) {
                        throw Error("vkf-quantize: tensor '" + e.name + "': element " + fmt::to_string(*i) + " (" +
                                    fmt::format("{:f}", values[*i]) + ") does not fit fp16");
                    }
                    for (std::size_t i = 0; i < halves.size(); ++i) {
                        store_le(out.data() + 2 * i, halves[i]);
                    }
                }});
            continue;
        }
        const std::size_t rows = e.shape.at(0), k = e.shape.at(1);
        sources.push_back(RawTensorSource{.name = name,
                                          .dtype = DType::U8,
                                          .shape = {rows, static_cast<std::size_t>(quant_row_bytes(format, k))},
                                          .bytes = [&checkpoint, e, format, rows, k, last](std::span<std::byte> out) {
                                              const std::vector<float> weights = read_tensor_f32(checkpoint, e);
                                              *last =
                                                  quantize_matrix(format, weights, rows, k, "tensor '" + e.name + "'");
                                              std::memcpy(out.data(), last->values.data(), out.size());
                                          }});
        sources.push_back(RawTensorSource{.name = name + std::string(kScalesSuffix),
                                          .dtype = DType::F16,
                                          .shape = {rows, k / kQuantBlock},
                                          .bytes = [last](std::span<std::byte> out) {
                                              for (std::size_t i = 0; i < last->scales.size(); ++i) {
                                                  store_le(out.data() + 2 * i, last->scales[i]);
                                              }
                                          }});
    }

    std::error_code error;
    fs::create_directories(out_dir, error);
    if (error) {
        throw Error("vkf-quantize: cannot create directory '" + out_dir.string() + "': " + error.message());
    }
    // open_checkpoint prefers model.safetensors, but a stale index next to it would mislead a reader.
    fs::remove(out_dir / "model.safetensors.index.json", error);
    write_safetensors_file(out_dir / "model.safetensors", sources,
                           {{std::string(kQuantFormatKey), to_string(format)},
                            {std::string(kQuantVersionKey), fmt::to_string(kQuantFormatVersion)}},
                           progress);
    const fs::path source_dir = fs::is_directory(model_dir) ? model_dir : model_dir.parent_path();
    for (const char* file : {"config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}) {
        const fs::path from = source_dir / file;
        if (fs::exists(from)) {
            // Through a temporary name, like every file written: a full disk leaves no half copy.
            write_file_atomically(out_dir / file, read_file(from, std::uint64_t{256} << 20, file), file);
        }
    }
}

}  // namespace vkf
