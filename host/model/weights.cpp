#include "host/model/weights.hpp"

#include "base/error.hpp"
#include "host/ops/device_tensor.hpp"
#include "host/quant/quantized_checkpoint.hpp"
#include "host/spec/random_weights.hpp"
#include "host/util/endian.hpp"
#include "host/util/half.hpp"
#include "host/util/math.hpp"
#include "host/util/random.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

namespace vkf {

namespace {

// Elements converted per upload: bounds the host memory a 250880 x 1024 table needs.
constexpr std::size_t kChunkElements = std::size_t{1} << 22;
// Bytes read per upload of a tensor stored as it is (fp16 weights, quantized planes).
constexpr std::uint64_t kChunkBytes = std::uint64_t{8} << 20;

// A tensor's device buffers: the values (a quantized matrix's values plane) and, for a
// quantized matrix, its scales.
struct TensorBuffers {
    Buffer values;
    Buffer scales;
    QuantFormat quant = QuantFormat::None;  // the blocks `values` holds
};

Buffer device_buffer(Context& ctx, std::uint64_t bytes, const std::string& name) {
    return ctx.create_buffer(std::max<std::uint64_t>(4, round_up(bytes, 4)), MemoryKind::Device, name);
}

class Uploader {
public:
    Uploader(Context& ctx, const ShardedCheckpoint& checkpoint, QuantFormat source_quant, WeightFormat format,
             const std::function<void(const WeightUploadProgress&)>& progress, std::uint64_t total_bytes,
             bool check_finite)
        : ctx_(ctx),
          checkpoint_(checkpoint),
          source_quant_(source_quant),
          format_(format),
          progress_(progress),
          check_finite_(check_finite) {
        state_.total_bytes = total_bytes;
    }

    // `row_sumsq`, when given, receives the sum of squares of every row of the matrix as
    // the GPU reads it (after rounding to fp16 or quantizing): Baichuan2's NormHead.
    TensorBuffers tensor(const ExpectedTensor& expected, std::vector<double>* row_sumsq = nullptr) {
        row_sumsq_ = row_sumsq;
        row_length_ = expected.shape.back();
        if (row_sumsq_ != nullptr) {
            row_sumsq_->assign(expected.shape.size() == 2 ? expected.shape[0] : 1, 0.0);
        }
        TensorBuffers out;
        const bool matrix = quantized_role(expected.role) && format_.quant != QuantFormat::None;
        if (matrix && source_quant_ != QuantFormat::None) {
            out = stored_planes(expected, tensor_quantization(checkpoint_, expected.name, source_quant_));
        } else if (expected.transposed) {
            out = turned(expected, matrix);
        } else if (!matrix) {
            out.values = dense(expected.name);
        } else {
            out = quantized(expected);
        }
        if (progress_) {
            progress_(state_);
        }
        return out;
    }

private:
    // Element `first + i` of the tensor is NaN or infinite: the checkpoint is corrupt.
    [[noreturn]] static void fail_non_finite(const TensorFile& file, const TensorInfo& info, std::uint64_t index,
                                             double value) {
        throw Error(file.label() + ": tensor '" + info.name + "': element " + fmt::to_string(index) + " is " +
                    (std::isnan(value) ? "NaN" : "infinite") +
                    ": the checkpoint is corrupt (ModelOptions::check_finite_weights, vkf-run "
                    "--skip-weight-check, loads it anyway)");
    }

    void check_floats(const TensorFile& file, const TensorInfo& info, std::uint64_t first,
                      std::span<const float> values) const {
        if (!check_finite_) {
            return;
        }
        const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
        if (bad != values.end()) {
            fail_non_finite(file, info, first + static_cast<std::uint64_t>(bad - values.begin()), *bad);
        }
    }

    // Little-endian fp16 values: all-ones exponent bits mean infinity or NaN.
    void check_halves(const TensorFile& file, const TensorInfo& info, std::uint64_t first,
                      std::span<const std::byte> bytes) const {
        if (!check_finite_) {
            return;
        }
        for (std::size_t i = 0; i + 1 < bytes.size(); i += 2) {
            const std::uint16_t bits = load_le<std::uint16_t>(bytes.data() + i);
            if ((bits & 0x7c00u) == 0x7c00u) {
                fail_non_finite(file, info, first + i / 2, half_to_float(bits));
            }
        }
    }

    Buffer dense(const std::string& name) {
        const CheckpointTensor& t = checkpoint_.at(name);
        const TensorInfo& info = *t.info;
        const DType dtype = format_.dense;
        const std::size_t count = info.element_count();
        Buffer buffer = device_buffer(ctx_, count * element_size(dtype), name);
        const std::size_t in_size = element_size(info.dtype);
        if (dtype == DType::F16 && info.dtype == DType::F16 && std::endian::native == std::endian::little &&
            row_sumsq_ == nullptr) {
            copy_raw(*t.file, info, buffer, false, true);  // already the storage format
        } else {
            std::vector<float> values(std::min(count, kChunkElements));
            std::vector<std::byte> raw(values.size() * in_size);
            std::vector<std::uint16_t> halves(dtype == DType::F16 ? values.size() : 0);
            for (std::size_t first = 0; first < count; first += kChunkElements) {
                const std::size_t n = std::min(kChunkElements, count - first);
                const std::span<float> chunk(values.data(), n);
                const std::span<std::byte> chunk_raw(raw.data(), n * in_size);
                t.file->read_raw_into(info, first * in_size, chunk_raw);
                convert_to_f32(info.dtype, chunk_raw, chunk);
                check_floats(*t.file, info, first, chunk);
                upload_dense(t, info, buffer, first, chunk, halves);
            }
        }
        state_.bytes_done += info.byte_size();
        return buffer;
    }

    // Elements [first, first + values.size()) of a dense tensor, in the storage dtype.
    void upload_dense(const CheckpointTensor& t, const TensorInfo& info, const Buffer& buffer, std::size_t first,
                      std::span<const float> values, std::vector<std::uint16_t>& halves) {
        if (format_.dense == DType::F32) {
            add_row_sums(first, values);
            ctx_.upload(buffer, values, first * 4);
            return;
        }
        halves.resize(std::max(halves.size(), values.size()));
        const std::span<std::uint16_t> out(halves.data(), values.size());
        floats_to_halves(values, out);
        if (const std::optional<std::size_t> i = first_half_overflow(values, out)) {
            throw Error(t.file->label() + ": tensor '" + info.name + "': element " + fmt::to_string(first + *i) + " (" +
                        fmt::format("{:f}", values[*i]) +
                        ") does not fit fp16 weight storage; load the weights as fp32");
        }
        if (row_sumsq_ != nullptr) {
            std::vector<float> rounded(values.size());
            halves_to_floats(out, rounded);
            add_row_sums(first, rounded);
        }
        ctx_.upload(buffer, std::span<const std::uint16_t>(out), first * 2);
    }

    void add_row_sums(std::size_t first, std::span<const float> values) {
        if (row_sumsq_ == nullptr) {
            return;
        }
        for (std::size_t i = 0; i < values.size(); ++i) {
            (*row_sumsq_)[(first + i) / row_length_] += static_cast<double>(values[i]) * values[i];
        }
    }

    // A tensor stored the other way round ([in, out], GPT-2's Conv1D): read whole and turned
    // around on the host (its size in fp32 is the cost), then uploaded like any other.
    TensorBuffers turned(const ExpectedTensor& expected, bool quantize) {
        const CheckpointTensor& t = checkpoint_.at(expected.name);
        const TensorInfo& info = *t.info;
        const std::vector<float> values = read_tensor_f32(checkpoint_, expected);
        if (check_finite_) {
            const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
            if (bad != values.end()) {
                // Report the element's index in the file, which is stored [in, out].
                const std::size_t logical = static_cast<std::size_t>(bad - values.begin());
                const std::size_t out = expected.shape[0], in = expected.shape[1];
                fail_non_finite(*t.file, info, (logical % in) * out + logical / in, *bad);
            }
        }
        TensorBuffers result;
        if (quantize) {
            const std::uint64_t rows = expected.shape[0], k = expected.shape[1];
            const std::string what = t.file->label() + ": tensor '" + info.name + "'";
            const QuantizedMatrix m = quantize_matrix(format_.quant, values, rows, k, what);
            result.quant = format_.quant;
            result.values = device_buffer(ctx_, m.values.size(), expected.name);
            result.scales = device_buffer(ctx_, m.scales.size() * 2, expected.name + " scales");
            ctx_.upload(result.values, std::span<const std::uint8_t>(m.values));
            ctx_.upload(result.scales, std::span<const std::uint16_t>(m.scales));
            if (row_sumsq_ != nullptr) {
                add_row_sums(0, dequantize_matrix(format_.quant, m.values, m.scales, rows, k));
            }
        } else {
            result.values = device_buffer(ctx_, values.size() * element_size(format_.dense), expected.name);
            std::vector<std::uint16_t> halves;
            upload_dense(t, info, result.values, 0, values, halves);
        }
        state_.bytes_done += info.byte_size();
        return result;
    }

    // A quantized checkpoint's planes in `quant` (the matrix's own), uploaded as stored.
    TensorBuffers stored_planes(const ExpectedTensor& expected, QuantFormat quant) {
        const CheckpointTensor& values = checkpoint_.at(expected.name);
        if (is_kquant(quant)) {
            // A GGUF file's K-quant super-blocks: one tensor, its scales inside.
            TensorBuffers out{device_buffer(ctx_, values.info->byte_size(), expected.name), Buffer{}, quant};
            copy_raw(*values.file, *values.info, out.values, false, false);
            state_.bytes_done += values.info->byte_size();
            if (row_sumsq_ != nullptr) {
                add_row_sums(0, read_weights_f32(checkpoint_, expected, source_quant_));
            }
            return out;
        }
        const CheckpointTensor& scales = checkpoint_.at(expected.name + std::string(kScalesSuffix));
        TensorBuffers out{device_buffer(ctx_, values.info->byte_size(), expected.name),
                          device_buffer(ctx_, scales.info->byte_size(), expected.name + " scales"), quant};
        copy_raw(*values.file, *values.info, out.values, false, false);
        copy_raw(*scales.file, *scales.info, out.scales, std::endian::native != std::endian::little, true);
        state_.bytes_done += values.info->byte_size() + scales.info->byte_size();
        if (row_sumsq_ != nullptr) {
            add_row_sums(0, read_weights_f32(checkpoint_, expected, source_quant_));
        }
        return out;
    }

    // A tensor's stored bytes into `buffer`, a bounded chunk at a time; `swap_halves` turns
    // little-endian 16-bit values into the host's order; `halves` says they are fp16 values
    // to check.
    void copy_raw(const TensorFile& file, const TensorInfo& info, const Buffer& buffer, bool swap_halves, bool halves) {
        const std::uint64_t total = info.byte_size();
        std::vector<std::byte> chunk(static_cast<std::size_t>(std::min<std::uint64_t>(total, kChunkBytes)));
        for (std::uint64_t first = 0; first < total; first += kChunkBytes) {
            const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunkBytes, total - first));
            const std::span<std::byte> bytes(chunk.data(), n);
            file.read_raw_into(info, first, bytes);
            if (halves) {
                check_halves(file, info, first / 2, bytes);
            }
            if (swap_halves) {
                for (std::size_t i = 0; i + 1 < n; i += 2) {
                    const std::uint16_t v = load_le<std::uint16_t>(bytes.data() + i);
                    std::memcpy(bytes.data() + i, &v, 2);
                }
            }
            ctx_.upload(buffer, std::span<const std::byte>(bytes), first);
        }
    }

    // An ordinary checkpoint's matrix quantized at load time, a band of rows at a time.
    TensorBuffers quantized(const ExpectedTensor& expected) {
        const CheckpointTensor& t = checkpoint_.at(expected.name);
        const TensorInfo& info = *t.info;
        const QuantFormat q = format_.quant;
        const std::uint64_t rows = expected.shape.at(0), k = expected.shape.at(1);
        const std::string what = t.file->label() + ": tensor '" + info.name + "'";
        const std::uint64_t row_bytes = quant_row_bytes(q, k, what);
        const std::uint64_t row_scales = quant_row_scales(k, what);
        TensorBuffers out{device_buffer(ctx_, rows * row_bytes, expected.name),
                          device_buffer(ctx_, rows * row_scales * 2, expected.name + " scales"), q};
        const std::size_t in_size = element_size(info.dtype);
        const std::uint64_t band = std::max<std::uint64_t>(1, kChunkElements / k);
        std::vector<float> values(std::min(rows, band) * k);
        std::vector<std::byte> raw(values.size() * in_size);
        for (std::uint64_t r0 = 0; r0 < rows; r0 += band) {
            const std::uint64_t n = std::min(band, rows - r0);
            const std::span<float> chunk(values.data(), n * k);
            const std::span<std::byte> chunk_raw(raw.data(), n * k * in_size);
            t.file->read_raw_into(info, r0 * k * in_size, chunk_raw);
            convert_to_f32(info.dtype, chunk_raw, chunk);
            check_floats(*t.file, info, r0 * k, chunk);
            const QuantizedMatrix m = quantize_matrix(q, chunk, n, k, what + " rows from " + fmt::to_string(r0));
            if (row_sumsq_ != nullptr) {
                add_row_sums(r0 * k, dequantize_matrix(q, m.values, m.scales, n, k));
            }
            ctx_.upload(out.values, std::span<const std::uint8_t>(m.values), r0 * row_bytes);
            ctx_.upload(out.scales, std::span<const std::uint16_t>(m.scales), r0 * row_scales * 2);
        }
        state_.bytes_done += info.byte_size();
        return out;
    }

    Context& ctx_;
    const ShardedCheckpoint& checkpoint_;
    QuantFormat source_quant_;
    WeightFormat format_;
    const std::function<void(const WeightUploadProgress&)>& progress_;
    bool check_finite_;
    WeightUploadProgress state_;
    std::vector<double>* row_sumsq_ = nullptr;
    std::size_t row_length_ = 1;
};

// Hands the buffers of expected_tensors(config), in that order, to their slots.
ModelWeights assemble(const ModelConfig& config, WeightFormat format, const std::vector<ExpectedTensor>& tensors,
                      std::vector<TensorBuffers> flat) {
    ModelWeights w{.format = format};
    w.layers.resize(config.n_layer);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const ExpectedTensor& t = tensors[i];
        TensorBuffers& b = flat.at(i);
        w.bytes += b.values.size() + (b.scales.valid() ? b.scales.size() : 0);
        LayerWeights& layer = w.layers.at(t.layer);
        const auto norm = [&](NormWeights& n) { (t.bias ? n.bias : n.weight) = std::move(b.values); };
        const auto linear = [&](LinearWeights& l) {
            if (t.bias) {
                l.bias = std::move(b.values);
                return;
            }
            l.weight = std::move(b.values);
            l.scales = std::move(b.scales);
            l.quant = b.quant;
            l.out = static_cast<std::uint32_t>(t.shape.at(0));
            l.in = static_cast<std::uint32_t>(t.shape.at(1));
        };
        switch (t.slot) {
            case TensorSlot::Embedding:
                w.embedding = std::move(b.values);
                w.embedding_scales = std::move(b.scales);
                w.embedding_quant = b.quant;
                break;
            case TensorSlot::PositionEmbedding:
                w.position_embedding = std::move(b.values);
                break;
            case TensorSlot::EmbeddingNorm:
                norm(w.embedding_norm);
                break;
            case TensorSlot::AttnNorm:
                norm(layer.attn_norm);
                break;
            case TensorSlot::Qkv:
                linear(layer.qkv);
                break;
            case TensorSlot::QNorm:
                norm(layer.q_norm);
                break;
            case TensorSlot::KNorm:
                norm(layer.k_norm);
                break;
            case TensorSlot::AttnOut:
                linear(layer.attn_out);
                break;
            case TensorSlot::MlpNorm:
                norm(layer.mlp_norm);
                break;
            case TensorSlot::Gate:
                linear(layer.gate);
                break;
            case TensorSlot::Up:
                linear(layer.up);
                break;
            case TensorSlot::Down:
                linear(layer.down);
                break;
            case TensorSlot::FinalNorm:
                norm(w.final_norm);
                break;
            case TensorSlot::LmHead:
                w.lm_head = std::move(b.values);
                w.lm_head_scales = std::move(b.scales);
                w.lm_head_quant = b.quant;
                break;
        }
    }
    return w;
}

// Baichuan2's NormHead: 1 / max(|row|, 1e-12) per row (torch.nn.functional.normalize).
Buffer row_scales_buffer(Context& ctx, const std::vector<double>& sumsq) {
    std::vector<float> scales(sumsq.size());
    for (std::size_t i = 0; i < sumsq.size(); ++i) {
        scales[i] = static_cast<float>(1.0 / std::max(std::sqrt(sumsq[i]), 1e-12));
    }
    Buffer b = device_buffer(ctx, scales.size() * 4, "lm_head row scales");
    ctx.upload(b, std::span<const float>(scales));
    return b;
}

}  // namespace

WeightFormat default_weight_format(const ShardedCheckpoint& checkpoint, const ModelConfig& config) {
    const QuantFormat q = checkpoint_quantization(checkpoint);
    if (q != QuantFormat::None) {
        return WeightFormat{.dense = DType::F16, .quant = q};
    }
    for (const ExpectedTensor& expected : expected_tensors(config)) {
        const CheckpointTensor* t = checkpoint.find(expected.name);
        if (t == nullptr || t->info->dtype != DType::F16) {
            return WeightFormat{.dense = DType::F32};
        }
    }
    return WeightFormat{.dense = DType::F16};
}

ModelWeights upload_weights(Context& ctx, const ModelConfig& config, const ShardedCheckpoint& checkpoint,
                            WeightFormat format, const std::function<void(const WeightUploadProgress&)>& progress,
                            bool check_finite, std::optional<LayerRange> layers) {
    validate(config);
    const QuantFormat source = check_model_checkpoint(checkpoint, config);
    if (source != QuantFormat::None && format != WeightFormat{.dense = DType::F16, .quant = source}) {
        throw Error("checkpoint '" + checkpoint.source().string() + "' is quantized as " + to_string(source) +
                    "; it loads only as " + to_string(source) + ", not as " + to_string(format) +
                    " (quantize the original checkpoint to another format instead)");
    }
    if (format.quant != QuantFormat::None && format.dense != DType::F16) {
        throw Error("model weights: quantized matrices go with fp16 norms and biases, not " +
                    std::string(dtype_name(format.dense)));
    }
    const LayerRange range = layers.value_or(all_layers(config));
    check_layer_range(config, range);
    const std::vector<ExpectedTensor> tensors = stage_tensors(config, range);
    std::uint64_t total = 0;
    for (const ExpectedTensor& expected : tensors) {
        total += checkpoint.tensor_info(expected.name).byte_size();
        if (source != QuantFormat::None && quantized_role(expected.role) &&
            !is_kquant(tensor_quantization(checkpoint, expected.name, source))) {
            total += checkpoint.tensor_info(expected.name + std::string(kScalesSuffix)).byte_size();
        }
    }

    Uploader up(ctx, checkpoint, source, format, progress, total, check_finite);
    std::vector<TensorBuffers> flat;
    std::vector<double> head_sumsq;
    for (const ExpectedTensor& expected : tensors) {
        const bool head = expected.slot == TensorSlot::LmHead && config.normalized_lm_head;
        flat.push_back(up.tensor(expected, head ? &head_sumsq : nullptr));
    }
    ModelWeights w = assemble(config, format, tensors, std::move(flat));
    if (config.normalized_lm_head && range.end == config.n_layer) {
        w.lm_head_row_scales = row_scales_buffer(ctx, head_sumsq);
        w.bytes += w.lm_head_row_scales.size();
    }
    return w;
}

ModelWeights synthetic_weights(Context& ctx, const ModelConfig& config, WeightFormat format,
                               std::optional<LayerRange> layers) {
    validate(config);
    // One block of seeded random values per role (seeded by the role), repeated over each
    // tensor: cheap for a 500 MB table, and never constant data a GPU could compress or a CPU
    // flush to zero. Quantized matrices repeat a band of rows quantized once.
    constexpr std::size_t kBlock = std::size_t{1} << 16;
    const auto make = [&](const ExpectedTensor& t) {
        const WeightDistribution d = weight_distribution(t.role);
        std::uint64_t count = 1;
        for (const std::size_t dim : t.shape) {
            count *= dim;
        }
        if (format.quant != QuantFormat::None && quantized_role(t.role)) {
            const std::uint64_t rows = t.shape.at(0), k = t.shape.at(1);
            const std::uint64_t band = std::min<std::uint64_t>(rows, std::max<std::uint64_t>(1, kBlock / k));
            std::vector<float> block =
                random_uniform(band * k, static_cast<std::uint64_t>(t.role) + 1, -d.scale, d.scale);
            for (float& x : block) {
                x += d.offset;
            }
            const QuantizedMatrix q = quantize_matrix(format.quant, block, band, k, t.name);
            TensorBuffers out{device_buffer(ctx, rows * quant_row_bytes(format.quant, k), t.name),
                              device_buffer(ctx, rows * quant_row_scales(k) * 2, t.name + " scales"), format.quant};
            upload_repeated_bytes(ctx, out.values, std::as_bytes(std::span(q.values)),
                                  rows * quant_row_bytes(format.quant, k));
            upload_repeated_bytes(ctx, out.scales, std::as_bytes(std::span(q.scales)), rows * quant_row_scales(k) * 2);
            return out;
        }
        std::vector<float> block = random_uniform(kBlock, static_cast<std::uint64_t>(t.role) + 1, -d.scale, d.scale);
        for (float& x : block) {
            x += d.offset;
        }
        Buffer b = device_buffer(ctx, count * element_size(format.dense), t.name);
        upload_repeated(ctx, b, block, format.dense, count);
        return TensorBuffers{.values = std::move(b)};
    };
    const LayerRange range = layers.value_or(all_layers(config));
    check_layer_range(config, range);
    const std::vector<ExpectedTensor> tensors = stage_tensors(config, range);
    std::vector<TensorBuffers> flat;
    for (const ExpectedTensor& t : tensors) {
        flat.push_back(make(t));
    }
    ModelWeights w = assemble(config, format, tensors, std::move(flat));
    if (config.normalized_lm_head && range.end == config.n_layer) {
        // Synthetic rows are uniform: any positive norm keeps the benchmark's work the same.
        w.lm_head_row_scales = row_scales_buffer(ctx, std::vector<double>(config.vocab_size, 1.0));
        w.bytes += w.lm_head_row_scales.size();
    }
    return w;
}

}  // namespace vkf
