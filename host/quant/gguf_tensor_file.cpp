#include "host/quant/gguf_tensor_file.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>

#include <fmt/format.h>

#include "base/error.hpp"
#include "host/quant/kquant_format.hpp"
#include "host/quant/quantized_checkpoint.hpp"
#include "host/spec/gguf_checkpoint.hpp"
#include "host/spec/refact_layout.hpp"

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
    build([&](std::string_view name) { return gguf_tensor_name(config, name); }, gguf_architecture_label(config.family),
          config);
}

GgufTensorFile::GgufTensorFile(GgufFile file, const EncoderConfig& config) : file_(std::move(file)) {
    // No jina-bert-v2 tensor has its rows moved: the decoder configuration is never asked for.
    build([&](std::string_view name) { return gguf_encoder_tensor_name(config, name); }, "jina-bert-v2", ModelConfig{});
}

void GgufTensorFile::build(const std::function<std::optional<GgufTensorName>(std::string_view)>& map,
                           std::string_view architecture, const ModelConfig& config) {
    metadata_["format"] = "gguf";
    // The parts of split tensors by their family name, gathered before the tensor is presented.
    std::map<std::string, std::pair<GgufTensorName, std::vector<const GgufTensorInfo*>>> split;
    for (const GgufTensorInfo& info : file_.tensors()) {
        std::optional<GgufTensorName> mapped = map(info.name);
        if (!mapped) {
            throw Error(
                fmt::format("{}: tensor '{}' is not one of llama.cpp's {} tensors", label(), info.name, architecture));
        }
        if (mapped->parts == 1) {
            present(*mapped, {&info}, config);
            continue;
        }
        auto& [name, parts] =
            split.try_emplace(mapped->name, *mapped, std::vector<const GgufTensorInfo*>(mapped->parts)).first->second;
        parts[mapped->part] = &info;
    }
    for (const auto& [name, entry] : split) {
        for (std::size_t part = 0; part < entry.second.size(); ++part) {
            if (entry.second[part] == nullptr) {
                throw Error(fmt::format("{}: '{}' is split in {} tensors and part {} of them is missing", label(), name,
                                        entry.second.size(), part));
            }
        }
        present(entry.first, entry.second, config);
    }
    if (quantized_ != nullptr) {
        if (dense_matrix_ != nullptr) {
            throw Error(
                fmt::format("{}: tensor '{}' is {} but '{}' is {}: vkformer loads the matrices of a GGUF file "
                            "all float or all quantized",
                            label(), dense_matrix_->name, ggml_type_name(dense_matrix_->type), quantized_->name,
                            ggml_type_name(quantized_->type)));
        }
        // The type most matrices have names the file's format (a mix's base type: Q4_K_M's
        // Q4_K); the others are named one by one.
        std::map<std::string, std::size_t> counts;
        for (const auto& [name, format] : matrix_formats_) {
            ++counts[format];
        }
        const std::string main_format =
            std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
                return a.second < b.second;
            })->first;
        metadata_[std::string(kQuantFormatKey)] = main_format;
        metadata_[std::string(kQuantVersionKey)] = fmt::to_string(kQuantFormatVersion);
        for (const auto& [name, format] : matrix_formats_) {
            if (format != main_format) {
                metadata_[fmt::format("{}{}", kTensorQuantPrefix, name)] = format;
            }
        }
    }
}

void GgufTensorFile::present(const GgufTensorName& mapped, std::vector<const GgufTensorInfo*> parts,
                             const ModelConfig& config) {
    const GgufTensorInfo& info = *parts.front();
    // Parts may differ in their row count only (Refact's attn_q and its one-head attn_k, attn_v).
    const auto rows_of = [](const GgufTensorInfo& t) { return t.dims.empty() ? std::uint64_t{1} : t.dims.back(); };
    const auto row_shape = [](const GgufTensorInfo& t) {
        return std::vector<std::uint64_t>(t.dims.begin(), t.dims.empty() ? t.dims.end() : t.dims.end() - 1);
    };
    for (std::size_t p = 0; p < parts.size(); ++p) {
        const GgufTensorInfo* part = parts[p];
        if (!mapped.part_rows.empty() && rows_of(*part) != mapped.part_rows[p]) {
            throw Error(fmt::format("{}: tensor '{}' has {} rows; as part {} of '{}' it must have {}", label(),
                                    part->name, rows_of(*part), p, mapped.name, mapped.part_rows[p]));
        }
        const bool alike = mapped.part_rows.empty()
                               ? part->dims == info.dims
                               : part->dims.size() == info.dims.size() && row_shape(*part) == row_shape(info);
        if (!alike || part->type != info.type) {
            throw Error(
                fmt::format("{}: tensors '{}' ({} [{}]) and '{}' ({} [{}]) are parts of one '{}' and must "
                            "be alike",
                            label(), info.name, ggml_type_name(info.type), fmt::join(info.shape(), ", "), part->name,
                            ggml_type_name(part->type), fmt::join(part->shape(), ", "), mapped.name));
        }
    }
    std::vector<std::size_t> shape;
    for (const std::uint64_t d : info.shape()) {
        shape.push_back(static_cast<std::size_t>(d));
    }
    Layout layout{.sources = parts};
    layout.part_rows = shape.empty() ? 1 : shape[0];
    layout.stored_row_bytes = info.byte_size / std::max<std::uint64_t>(layout.part_rows, 1);
    layout.part_begin.push_back(0);
    for (const GgufTensorInfo* part : parts) {
        layout.part_begin.push_back(layout.part_begin.back() + rows_of(*part));
    }
    if (!shape.empty()) {
        shape[0] = static_cast<std::size_t>(layout.part_begin.back());
    }
    if (mapped.row_order) {
        // Checked first: the order's size comes from the metadata, the tensor's from its bytes.
        if (shape.empty() || shape[0] != mapped.rows) {
            throw Error(fmt::format("{}: tensor '{}' has shape [{}]; its first dimension must be {}", label(),
                                    info.name, fmt::join(info.shape(), ", "), mapped.rows / parts.size()));
        }
        layout.row_order = mapped.row_order(config);
    }
    layout.rows = shape.empty() ? 1 : shape[0];
    if (const std::optional<DType> dtype = dense_dtype(info.type)) {
        if (shape.size() == 2 && dense_matrix_ == nullptr) {
            dense_matrix_ = &info;
        }
        if (mapped.transposed && shape.size() == 2 && parts.size() == 1 && !mapped.row_order) {
            // Presented [in, out]: rows of `out` elements, gathered from the whole stored tensor.
            layout.transposed = true;
            layout.rows = shape[1];
            layout.row_bytes = shape[0] * element_size(*dtype);
            layout.block_bytes = layout.field_bytes = static_cast<std::uint32_t>(element_size(*dtype));
            add(mapped.name, *dtype, {shape[1], shape[0]}, std::move(layout));
            return;
        }
        layout.row_bytes = layout.stored_row_bytes;
        layout.block_bytes = layout.field_bytes = static_cast<std::uint32_t>(element_size(*dtype));
        add(mapped.name, *dtype, shape, std::move(layout));
        return;
    }
    const std::optional<QuantFormat> quant = quant_of(info.type);
    if (quant && is_kquant(*quant) && shape.size() == 2) {
        quantized_ = quantized_ != nullptr ? quantized_ : &info;
        matrix_formats_.emplace_back(mapped.name, to_string(*quant));
        // The super-blocks as stored, one tensor (the kernels read them in place).
        layout.row_bytes = kquant_row_bytes(info.type, shape[1], info.name);
        layout.block_bytes = layout.field_bytes = 1;
        const std::size_t row_bytes = static_cast<std::size_t>(layout.row_bytes);
        add(mapped.name, DType::U8, {shape[0], row_bytes}, std::move(layout));
        return;
    }
    if (!quant) {
        throw Error(
            fmt::format("{}: tensor '{}' is of type {}, which vkformer does not read from GGUF files "
                        "(F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and Q2_K .. Q6_K are read)",
                        label(), info.name, ggml_type_name(info.type)));
    }
    if (shape.size() != 2) {
        throw Error(fmt::format("{}: tensor '{}' of shape [{}] is {}: vkformer quantizes only matrices", label(),
                                info.name, fmt::join(shape, ", "), ggml_type_name(info.type)));
    }
    quantized_ = quantized_ != nullptr ? quantized_ : &info;
    matrix_formats_.emplace_back(mapped.name, to_string(*quant));
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
    add(mapped.name, DType::U8, {shape[0], static_cast<std::size_t>(values.row_bytes)}, std::move(values));
    add(mapped.name + std::string(kScalesSuffix), DType::F16, {shape[0], static_cast<std::size_t>(k / kQuantBlock)},
        std::move(scales));
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
    if (l.transposed) {
        read_transposed(*own, l, offset, out);
        return;
    }
    const auto stored_row = [&](std::uint64_t r) { return l.row_order.empty() ? r : std::uint64_t{l.row_order[r]}; };
    const bool repacked = l.block_bytes != l.field_bytes;
    std::vector<std::byte> staging;
    std::uint64_t pos = offset;
    const std::uint64_t end = offset + out.size();
    while (pos < end) {
        const std::uint64_t r = pos / l.row_bytes;
        const std::uint64_t first = stored_row(r);
        const auto part = static_cast<std::uint64_t>(std::upper_bound(l.part_begin.begin(), l.part_begin.end(), first) -
                                                     l.part_begin.begin() - 1);
        const std::uint64_t part_end = l.part_begin[static_cast<std::size_t>(part) + 1];
        // Rows stored one after the other in one part are read together.
        std::uint64_t run = 1;
        while (r + run < l.rows && stored_row(r + run) == first + run && first + run < part_end) {
            ++run;
        }
        const std::uint64_t lo = pos - r * l.row_bytes;  // within the run
        std::uint64_t hi = std::min(run * l.row_bytes, end - r * l.row_bytes);
        const std::uint64_t run_start = (first - l.part_begin[static_cast<std::size_t>(part)]) * l.stored_row_bytes;
        const GgufTensorInfo& source = *l.sources[static_cast<std::size_t>(part)];
        std::byte* dst = out.data() + (pos - offset);
        if (!repacked) {
            file_.read_raw_into(source, run_start + lo, std::span<std::byte>(dst, hi - lo));
        } else {
            const std::uint64_t first_block = lo / l.field_bytes;
            hi = std::min(hi, (first_block + kStagingBytes / l.block_bytes) * l.field_bytes);
            const std::uint64_t last_block = (hi + l.field_bytes - 1) / l.field_bytes;
            staging.resize(static_cast<std::size_t>((last_block - first_block) * l.block_bytes));
            file_.read_raw_into(source, run_start + first_block * l.block_bytes, staging);
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

void GgufTensorFile::read_transposed(const TensorInfo& info, const Layout& l, std::uint64_t offset,
                                     std::span<std::byte> out) const {
    const std::lock_guard lock(transposed_mutex_);
    if (transposed_of_ != &info) {
        // The tensor is read whole and turned once; the loader then reads it in chunks.
        transposed_of_ = nullptr;
        const GgufTensorInfo& source = *l.sources.front();
        std::vector<std::byte> stored(static_cast<std::size_t>(source.byte_size));
        file_.read_raw_into(source, 0, stored);
        const std::size_t element = l.field_bytes, rows = static_cast<std::size_t>(l.part_rows);
        const std::size_t columns = static_cast<std::size_t>(l.rows);  // the stored rows' length
        transposed_.resize(stored.size());
        for (std::size_t r = 0; r < rows; ++r) {
            for (std::size_t c = 0; c < columns; ++c) {
                std::memcpy(transposed_.data() + (c * rows + r) * element, stored.data() + (r * columns + c) * element,
                            element);
            }
        }
        transposed_of_ = &info;
    }
    std::memcpy(out.data(), transposed_.data() + offset, out.size());
}

ShardedCheckpoint open_model_checkpoint(const std::filesystem::path& path) {
    std::error_code ignored;
    if (!std::filesystem::is_regular_file(path, ignored) || !looks_like_gguf(path)) {
        return with_refact_layout(open_checkpoint(path));
    }
    return open_gguf_model(open_gguf(path)).checkpoint;
}

ShardedCheckpoint open_encoder_checkpoint(const std::filesystem::path& path) {
    std::error_code ignored;
    if (!std::filesystem::is_regular_file(path, ignored) || !looks_like_gguf(path)) {
        return open_checkpoint(path);
    }
    GgufFile file = open_gguf(path);
    const EncoderConfig config = encoder_config_from_gguf(file);
    return ShardedCheckpoint::of_file(path, std::make_unique<GgufTensorFile>(std::move(file), config));
}

GgufModelSource open_gguf_model(GgufFile file) {
    ModelConfig config = model_config_from_gguf(file);
    const std::filesystem::path source = file.path();
    auto tensors = std::make_unique<GgufTensorFile>(std::move(file), config);
    return GgufModelSource{.config = std::move(config),
                           .checkpoint = ShardedCheckpoint::of_file(source, std::move(tensors))};
}

}  // namespace vkf
