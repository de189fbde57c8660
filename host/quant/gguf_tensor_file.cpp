#include "host/quant/gguf_tensor_file.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <system_error>

#include <fmt/format.h>

#include "base/error.hpp"
#include "host/quant/kquant_format.hpp"
#include "host/quant/quantized_checkpoint.hpp"
#include "host/spec/gguf_checkpoint.hpp"

namespace vkf {
namespace {

// Stored bytes read per pread when a tensor is repacked (its blocks split into planes).
constexpr std::uint64_t kStagingBytes = std::uint64_t{4} << 20;

std::optional<DType> dense_dtype(GgmlType type) {
    switch (type) {
        case GgmlType::F32:
            return DType::F32;
        case GgmlType::F16:
            return DType::F16;
        case GgmlType::BF16:
            return DType::BF16;
        default:
            return std::nullopt;
    }
}

std::optional<QuantFormat> quant_of(GgmlType type) {
    switch (type) {
        case GgmlType::Q8_0:
            return QuantFormat::Q8_0;
        case GgmlType::Q4_0:
            return QuantFormat::Q4_0;
        default:
            return kquant_format_of(type);
    }
}

}  // namespace

GgufTensorFile::GgufTensorFile(GgufFile file, const ModelConfig& config) : file_(std::move(file)) {
    metadata_["format"] = "gguf";
    const GgufTensorInfo* quantized = nullptr;  // the first quantized matrix
    const GgufTensorInfo* dense_matrix = nullptr;
    for (const GgufTensorInfo& info : file_.tensors()) {
        const std::optional<GgufTensorName> mapped = gguf_tensor_name(config, info.name);
        if (!mapped) {
            throw Error(fmt::format("{}: tensor '{}' is not one of llama.cpp's {} tensors", label(), info.name,
                                    gguf_architecture_label(config.family)));
        }
        std::vector<std::size_t> shape;
        for (const std::uint64_t d : info.shape()) {
            shape.push_back(static_cast<std::size_t>(d));
        }
        Layout layout{.source = &info};
        if (mapped->row_order) {
            // Checked first: the order's size comes from the metadata, the tensor's from its bytes.
            if (shape.empty() || shape[0] != mapped->rows) {
                throw Error(fmt::format("{}: tensor '{}' has shape [{}]; its first dimension must be {}", label(),
                                        info.name, fmt::join(shape, ", "), mapped->rows));
            }
            layout.row_order = mapped->row_order(config);
        }
        layout.rows = shape.empty() ? 1 : shape[0];
        layout.stored_row_bytes = info.byte_size / std::max<std::uint64_t>(layout.rows, 1);
        if (const std::optional<DType> dtype = dense_dtype(info.type)) {
            if (shape.size() == 2 && dense_matrix == nullptr) {
                dense_matrix = &info;
            }
            layout.row_bytes = layout.stored_row_bytes;
            layout.block_bytes = layout.field_bytes = static_cast<std::uint32_t>(element_size(*dtype));
            add(mapped->name, *dtype, shape, std::move(layout));
            continue;
        }
        const std::optional<QuantFormat> quant = quant_of(info.type);
        if (quant && is_kquant(*quant) && shape.size() == 2) {
            if (quantized != nullptr && quantized->type != info.type) {
                throw Error(fmt::format(
                    "{}: tensor '{}' is {} but '{}' is {}: vkformer loads the matrices of a GGUF file in one "
                    "quantized type so far (a K-quant mix such as Q4_K_M is not read yet; llama-quantize --pure "
                    "makes a file of one type)",
                    label(), info.name, ggml_type_name(info.type), quantized->name, ggml_type_name(quantized->type)));
            }
            quantized = quantized != nullptr ? quantized : &info;
            // The super-blocks as stored, one tensor (the kernels read them in place).
            const std::uint64_t row_bytes = kquant_row_bytes(info.type, shape[1], info.name);
            layout.row_bytes = row_bytes;
            layout.block_bytes = layout.field_bytes = 1;
            add(mapped->name, DType::U8, {shape[0], static_cast<std::size_t>(row_bytes)}, std::move(layout));
            continue;
        }
        if (!quant) {
            throw Error(
                fmt::format("{}: tensor '{}' is of type {}, which vkformer does not read from GGUF files "
                            "(F32, F16, BF16, Q8_0, Q4_0 and Q2_K .. Q6_K are read)",
                            label(), info.name, ggml_type_name(info.type)));
        }
        if (shape.size() != 2) {
            throw Error(fmt::format("{}: tensor '{}' of shape [{}] is {}: vkformer quantizes only matrices", label(),
                                    info.name, fmt::join(shape, ", "), ggml_type_name(info.type)));
        }
        if (quantized != nullptr && quantized->type != info.type) {
            throw Error(fmt::format(
                "{}: tensor '{}' is {} but '{}' is {}: vkformer loads the matrices of a GGUF "
                "file in one quantized type (llama-quantize --pure makes such a file)",
                label(), info.name, ggml_type_name(info.type), quantized->name, ggml_type_name(quantized->type)));
        }
        quantized = quantized != nullptr ? quantized : &info;
        const std::uint64_t k = shape[1];
        const std::uint32_t value_bytes = quant_block_bytes(*quant);
        Layout values = layout;
        values.block_bytes = 2 + value_bytes;  // the fp16 d, then the values
        values.field_offset = 2;
        values.field_bytes = value_bytes;
        values.row_bytes = quant_row_bytes(*quant, k, info.name);
        Layout scales = layout;
        scales.block_bytes = 2 + value_bytes;
        scales.field_offset = 0;
        scales.field_bytes = 2;
        scales.row_bytes = quant_row_scales(k, info.name) * 2;
        add(mapped->name, DType::U8, {shape[0], static_cast<std::size_t>(values.row_bytes)}, std::move(values));
        add(mapped->name + std::string(kScalesSuffix), DType::F16,
            {shape[0], static_cast<std::size_t>(k / kQuantBlock)}, std::move(scales));
    }
    if (quantized != nullptr) {
        if (dense_matrix != nullptr) {
            throw Error(
                fmt::format("{}: tensor '{}' is {} but '{}' is {}: vkformer loads the matrices of a GGUF "
                            "file in one quantized type (llama-quantize --pure makes such a file)",
                            label(), dense_matrix->name, ggml_type_name(dense_matrix->type), quantized->name,
                            ggml_type_name(quantized->type)));
        }
        metadata_["vkformer.quantization"] = to_string(*quant_of(quantized->type));
        metadata_["vkformer.quantization_version"] = "1";
    }
}

void GgufTensorFile::add(std::string name, DType dtype, std::vector<std::size_t> shape, Layout layout) {
    const std::uint64_t begin = tensors_.empty() ? 0 : tensors_.back().data_end;
    TensorInfo info{.name = std::move(name), .dtype = dtype, .shape = std::move(shape), .data_begin = begin};
    info.data_end = begin + layout.rows * layout.row_bytes;
    if (!index_.emplace(info.name, tensors_.size()).second) {
        throw Error(fmt::format("{}: two tensors are both '{}'", label(), info.name));
    }
    tensors_.push_back(std::move(info));
    layouts_.push_back(std::move(layout));
}

const TensorInfo* GgufTensorFile::find(std::string_view name) const {
    const auto it = index_.find(std::string(name));
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

void GgufTensorFile::read_raw_into(const TensorInfo& info, std::uint64_t offset, std::span<std::byte> out) const {
    const TensorInfo* own = find(info.name);
    if (own == nullptr || own->data_begin != info.data_begin || own->data_end != info.data_end) {
        throw Error(fmt::format("{}: tensor '{}' is not one of this file's", label(), info.name));
    }
    if (offset > info.byte_size() || out.size() > info.byte_size() - offset) {
        throw Error(fmt::format("{}: tensor '{}': bytes {} to {} lie beyond its {}", label(), info.name, offset,
                                offset + out.size(), info.byte_size()));
    }
    const Layout& l = layouts_[static_cast<std::size_t>(own - tensors_.data())];
    const auto stored_row = [&](std::uint64_t r) { return l.row_order.empty() ? r : std::uint64_t{l.row_order[r]}; };
    const bool repacked = l.block_bytes != l.field_bytes;
    std::vector<std::byte> staging;
    std::uint64_t pos = offset;
    const std::uint64_t end = offset + out.size();
    while (pos < end) {
        const std::uint64_t r = pos / l.row_bytes;
        // Rows stored one after the other are read together.
        std::uint64_t run = l.row_order.empty() ? l.rows - r : 1;
        while (r + run < l.rows && stored_row(r + run) == stored_row(r) + run) {
            ++run;
        }
        const std::uint64_t lo = pos - r * l.row_bytes;  // within the run
        std::uint64_t hi = std::min(run * l.row_bytes, end - r * l.row_bytes);
        const std::uint64_t run_start = stored_row(r) * l.stored_row_bytes;
        std::byte* dst = out.data() + (pos - offset);
        if (!repacked) {
            file_.read_raw_into(*l.source, run_start + lo, std::span<std::byte>(dst, hi - lo));
        } else {
            const std::uint64_t first_block = lo / l.field_bytes;
            hi = std::min(hi, (first_block + kStagingBytes / l.block_bytes) * l.field_bytes);
            const std::uint64_t last_block = (hi + l.field_bytes - 1) / l.field_bytes;
            staging.resize(static_cast<std::size_t>((last_block - first_block) * l.block_bytes));
            file_.read_raw_into(*l.source, run_start + first_block * l.block_bytes, staging);
            for (std::uint64_t i = lo; i < hi;) {
                const std::uint64_t block = i / l.field_bytes, within = i % l.field_bytes;
                const std::uint64_t n = std::min<std::uint64_t>(l.field_bytes - within, hi - i);
                std::memcpy(dst + (i - lo),
                            staging.data() + (block - first_block) * l.block_bytes + l.field_offset + within, n);
                i += n;
            }
        }
        pos = r * l.row_bytes + hi;
    }
}

ShardedCheckpoint open_model_checkpoint(const std::filesystem::path& path) {
    std::error_code ignored;
    if (!std::filesystem::is_regular_file(path, ignored) || !looks_like_gguf(path)) {
        return open_checkpoint(path);
    }
    return open_gguf_model(open_gguf(path)).checkpoint;
}

GgufModelSource open_gguf_model(GgufFile file) {
    ModelConfig config = model_config_from_gguf(file);
    const std::filesystem::path source = file.path();
    auto tensors = std::make_unique<GgufTensorFile>(std::move(file), config);
    return GgufModelSource{.config = std::move(config),
                           .checkpoint = ShardedCheckpoint::of_file(source, std::move(tensors))};
}

}  // namespace vkf
