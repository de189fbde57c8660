#include "host/model/weights.hpp"

#include "host/ops/device_tensor.hpp"
#include "host/util/math.hpp"

#include "host/spec/random_weights.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"
#include "runtime/error.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>
#include <utility>

namespace vkf {

namespace {

// Elements converted per upload: bounds the host memory a 250880 x 1024 table needs.
constexpr std::size_t kChunkElements = std::size_t{1} << 22;

class Uploader {
public:
    Uploader(Context& ctx, const ShardedCheckpoint& checkpoint, DType dtype,
             const std::function<void(const WeightUploadProgress&)>& progress, std::uint64_t total_bytes)
        : ctx_(ctx), checkpoint_(checkpoint), dtype_(dtype), progress_(progress) {
        state_.total_bytes = total_bytes;
    }

    Buffer tensor(const std::string& name) {
        const CheckpointTensor& t = checkpoint_.at(name);
        const TensorInfo& info = *t.info;
        const std::size_t count = info.element_count();
        const std::span<const std::byte> raw = t.file->read_raw(info);
        Buffer buffer = ctx_.create_buffer(std::max<std::uint64_t>(4, round_up(count * element_size(dtype_), 4)),
                                           MemoryKind::Device, name);
        const std::size_t in_size = element_size(info.dtype);
        if (dtype_ == DType::F16 && info.dtype == DType::F16 && std::endian::native == std::endian::little) {
            ctx_.upload(buffer, raw);  // already the storage format
        } else {
            std::vector<float> values(std::min(count, kChunkElements));
            std::vector<std::uint16_t> halves(dtype_ == DType::F16 ? values.size() : 0);
            for (std::size_t first = 0; first < count; first += kChunkElements) {
                const std::size_t n = std::min(kChunkElements, count - first);
                const std::span<float> chunk(values.data(), n);
                convert_to_f32(info.dtype, raw.subspan(first * in_size, n * in_size), chunk);
                if (dtype_ == DType::F32) {
                    ctx_.upload(buffer, std::span<const float>(chunk), first * 4);
                    continue;
                }
                const std::span<std::uint16_t> out(halves.data(), n);
                floats_to_halves(chunk, out);
                for (std::size_t i = 0; i < n; ++i) {
                    if (std::isfinite(chunk[i]) && !std::isfinite(half_to_float(out[i]))) {
                        throw Error("safetensors file '" + t.file->path().string() + "': tensor '" + info.name +
                                    "': element " + std::to_string(first + i) + " (" + std::to_string(chunk[i]) +
                                    ") does not fit fp16 weight storage; load the weights as fp32");
                    }
                }
                ctx_.upload(buffer, std::span<const std::uint16_t>(out), first * 2);
            }
        }
        state_.bytes_done += info.byte_size();
        if (progress_) {
            progress_(state_);
        }
        return buffer;
    }

private:
    Context& ctx_;
    const ShardedCheckpoint& checkpoint_;
    DType dtype_;
    const std::function<void(const WeightUploadProgress&)>& progress_;
    WeightUploadProgress state_;
};

// Hands the buffers of expected_tensors(config), in that order, to the slots of the
// blocks: the one place that knows how the family's tensors map onto a block.
ModelWeights assemble(const ModelConfig& config, DType dtype, std::vector<Buffer> flat) {
    ModelWeights w{.dtype = dtype};
    for (const Buffer& b : flat) {
        w.bytes += b.size();
    }
    std::size_t next = 0;
    const auto take = [&]() { return std::move(flat.at(next++)); };
    const bool bias = config.family == ModelFamily::Bloom || !config.no_bias;
    const std::uint32_t h = config.hidden, ffn = config.ffn_hidden;
    const auto norm = [&](bool has_bias) {
        NormWeights n{.weight = take()};
        if (has_bias)
            n.bias = take();
        return n;
    };
    const auto linear = [&](std::uint32_t out, std::uint32_t in) {
        LinearWeights l{.weight = take(), .out = out, .in = in};
        if (bias)
            l.bias = take();
        return l;
    };
    w.embedding = take();
    if (config.family == ModelFamily::Bloom) {
        w.embedding_norm = norm(true);
    }
    for (std::uint32_t i = 0; i < config.n_layer; ++i) {
        LayerWeights layer;
        layer.attn_norm = norm(bias);
        layer.qkv = linear(3 * h, h);
        layer.attn_out = linear(h, h);
        layer.mlp_norm = norm(bias);
        layer.up = linear(ffn, h);
        layer.down = linear(h, ffn);
        w.layers.push_back(std::move(layer));
    }
    w.final_norm = norm(bias);
    if (!config.tie_word_embeddings) {
        w.lm_head = take();
    }
    if (next != flat.size()) {
        throw Error("model weights: internal error, " + std::to_string(flat.size() - next) + " tensors unused");
    }
    return w;
}

}  // namespace

DType default_weight_dtype(const ShardedCheckpoint& checkpoint, const ModelConfig& config) {
    for (const ExpectedTensor& expected : expected_tensors(config)) {
        const CheckpointTensor* t = checkpoint.find(expected.name);
        if (t == nullptr || t->info->dtype != DType::F16) {
            return DType::F32;
        }
    }
    return DType::F16;
}

ModelWeights upload_weights(Context& ctx, const ModelConfig& config, const ShardedCheckpoint& checkpoint, DType dtype,
                            const std::function<void(const WeightUploadProgress&)>& progress) {
    validate(config);
    check_checkpoint(checkpoint, config);
    const std::vector<ExpectedTensor> tensors = expected_tensors(config);
    std::uint64_t total = 0;
    for (const ExpectedTensor& expected : tensors) {
        total += checkpoint.tensor_info(expected.name).byte_size();
    }

    Uploader up(ctx, checkpoint, dtype, progress, total);
    std::vector<Buffer> flat;
    for (const ExpectedTensor& expected : tensors) {
        flat.push_back(up.tensor(expected.name));
    }
    return assemble(config, dtype, std::move(flat));
}

ModelWeights synthetic_weights(Context& ctx, const ModelConfig& config, DType dtype) {
    validate(config);
    // One block of seeded random values per role (seeded by the role), repeated over each
    // tensor: cheap for a 500 MB table, and never constant data a GPU could compress or a CPU
    // flush to zero.
    constexpr std::size_t kBlock = std::size_t{1} << 16;
    const auto make = [&](const std::string& name, const std::vector<std::size_t>& shape, TensorRole role) {
        const WeightDistribution d = weight_distribution(role);
        std::vector<float> block = random_uniform(kBlock, static_cast<std::uint64_t>(role) + 1, -d.scale, d.scale);
        for (float& x : block) {
            x += d.offset;
        }
        std::uint64_t count = 1;
        for (const std::size_t dim : shape) {
            count *= dim;
        }
        Buffer b = ctx.create_buffer(std::max<std::uint64_t>(4, round_up(count * element_size(dtype), 4)),
                                     MemoryKind::Device, name);
        upload_repeated(ctx, b, block, dtype, count);
        return b;
    };
    std::vector<Buffer> flat;
    for (const ExpectedTensor& t : expected_tensors(config)) {
        flat.push_back(make(t.name, t.shape, t.role));
    }
    return assemble(config, dtype, std::move(flat));
}

}  // namespace vkf
