#include "host/model/tensor_upload.hpp"

#include "base/error.hpp"
#include "host/quant/quantized_checkpoint.hpp"
#include "host/util/half.hpp"
#include "host/util/math.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace vkf {

namespace {

// Elements converted per upload: bounds the host memory a large table needs.
constexpr std::size_t kChunkElements = std::size_t{1} << 22;

Buffer device_buffer(Context& ctx, std::uint64_t bytes, const std::string& name) {
    return ctx.create_buffer(std::max<std::uint64_t>(4, round_up(bytes, 4)), MemoryKind::Device, name);
}

std::string describe(const CheckpointTensor& t) {
    return t.file->label() + ": tensor '" + t.info->name + "'";
}

void check_finite_values(const CheckpointTensor& t, std::uint64_t first, std::span<const float> values) {
    const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
    if (bad != values.end()) {
        throw Error(describe(t) + ": element " +
                    fmt::to_string(first + static_cast<std::uint64_t>(bad - values.begin())) + " is " +
                    (std::isnan(*bad) ? "NaN" : "infinite") +
                    ": the checkpoint is corrupt (vkf-embed --skip-weight-check loads it anyway)");
    }
}

// Elements [first, first + out.size()) of the tensor as fp32.
void read_f32(const CheckpointTensor& t, std::uint64_t first, std::span<float> out, std::vector<std::byte>& raw,
              bool check_finite) {
    const std::size_t in_size = element_size(t.info->dtype);
    raw.resize(out.size() * in_size);
    t.file->read_raw_into(*t.info, first * in_size, raw);
    convert_to_f32(t.info->dtype, raw, out);
    if (check_finite) {
        check_finite_values(t, first, out);
    }
}

UploadedTensor dense(Context& ctx, const CheckpointTensor& t, const std::string& name, DType dtype, bool check_finite) {
    const std::size_t count = t.info->element_count();
    UploadedTensor out{.values = device_buffer(ctx, count * element_size(dtype), name), .scales = {}};
    std::vector<float> values(std::min(count, kChunkElements));
    std::vector<std::uint16_t> halves(dtype == DType::F16 ? values.size() : 0);
    std::vector<std::byte> raw;
    for (std::size_t first = 0; first < count; first += kChunkElements) {
        const std::span<float> chunk(values.data(), std::min(kChunkElements, count - first));
        read_f32(t, first, chunk, raw, check_finite);
        if (dtype == DType::F32) {
            ctx.upload(out.values, std::span<const float>(chunk), first * 4);
            continue;
        }
        const std::span<std::uint16_t> h(halves.data(), chunk.size());
        floats_to_halves(chunk, h);
        if (const std::optional<std::size_t> i = first_half_overflow(chunk, h)) {
            throw Error(describe(t) + ": element " + fmt::to_string(first + *i) + " (" +
                        fmt::format("{:f}", chunk[*i]) +
                        ") does not fit fp16 weight storage; load the weights as fp32");
        }
        ctx.upload(out.values, std::span<const std::uint16_t>(h), first * 2);
    }
    return out;
}

UploadedTensor quantized(Context& ctx, const CheckpointTensor& t, const ExpectedTensor& expected, QuantFormat q,
                         bool check_finite) {
    const std::uint64_t rows = expected.shape.at(0), k = expected.shape.at(1);
    const std::string what = describe(t);
    const std::uint64_t row_bytes = quant_row_bytes(q, k, what);
    const std::uint64_t row_scales = quant_row_scales(k, what);
    UploadedTensor out{.values = device_buffer(ctx, rows * row_bytes, expected.name),
                       .scales = device_buffer(ctx, rows * row_scales * 2, expected.name + " scales")};
    const std::uint64_t band = std::max<std::uint64_t>(1, kChunkElements / k);
    std::vector<float> values(std::min(rows, band) * k);
    std::vector<std::byte> raw;
    for (std::uint64_t r0 = 0; r0 < rows; r0 += band) {
        const std::uint64_t n = std::min(band, rows - r0);
        const std::span<float> chunk(values.data(), n * k);
        read_f32(t, r0 * k, chunk, raw, check_finite);
        const QuantizedMatrix m = quantize_matrix(q, chunk, n, k, what + " rows from " + fmt::to_string(r0));
        ctx.upload(out.values, std::span<const std::uint8_t>(m.values), r0 * row_bytes);
        ctx.upload(out.scales, std::span<const std::uint16_t>(m.scales), r0 * row_scales * 2);
    }
    return out;
}

}  // namespace

UploadedTensor upload_checkpoint_tensor(Context& ctx, const ShardedCheckpoint& checkpoint,
                                        const std::string& stored_name, const ExpectedTensor& expected,
                                        WeightFormat format, bool check_finite) {
    const CheckpointTensor& t = checkpoint.at(stored_name);
    if (format.quant != QuantFormat::None && quantized_role(expected.role)) {
        return quantized(ctx, t, expected, format.quant, check_finite);
    }
    return dense(ctx, t, expected.name, format.dense, check_finite);
}

}  // namespace vkf
