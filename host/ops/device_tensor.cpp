#include "host/ops/device_tensor.hpp"

#include "host/quant/kv_quant.hpp"

#include "base/error.hpp"
#include "host/util/half.hpp"
#include "host/util/math.hpp"

#include <algorithm>

namespace vkf {

DeviceTensor::DeviceTensor(Context& ctx, std::uint64_t elements, DType dtype, std::string name, std::uint32_t pad)
    : dtype_(dtype) {
    if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::U32) {
        throw Error("device tensor '" + name + "': dtype " + to_string(dtype) + " is not f32, f16 or u32");
    }
    const std::uint64_t esize = element_size(dtype);
    const std::uint64_t bytes = std::max<std::uint64_t>(4, round_up((pad + elements) * esize, 4));
    buffer_ = std::make_unique<Buffer>(ctx.create_buffer(bytes, MemoryKind::Device, std::move(name)));
    range_ = BufferRange{.buffer = buffer_.get(), .offset = pad * esize, .size = elements * esize};
}

DeviceTensor upload_tensor(Context& ctx, std::span<const float> values, DType dtype, std::string name,
                           std::uint32_t pad) {
    if (dtype == DType::U32) {
        throw Error("upload_tensor '" + name + "': float values cannot be stored as u32; use upload_words");
    }
    DeviceTensor tensor(ctx, values.size(), dtype, std::move(name), pad);
    if (dtype == DType::F16) {
        ctx.upload(tensor.buffer(), std::span<const std::uint16_t>(floats_to_halves(values)), tensor.range().offset);
    } else {
        ctx.upload(tensor.buffer(), values, tensor.range().offset);
    }
    return tensor;
}

DeviceTensor upload_words(Context& ctx, std::span<const std::uint32_t> words, std::string name, std::uint32_t pad) {
    DeviceTensor tensor(ctx, words.size(), DType::U32, std::move(name), pad);
    ctx.upload(tensor.buffer(), words, tensor.range().offset);
    return tensor;
}

DeviceTensor upload_kv_tensor(Context& ctx, std::span<const float> values, DType dense, QuantFormat quant,
                              std::uint32_t row_values, std::string name) {
    if (quant == QuantFormat::None) {
        return upload_tensor(ctx, values, dense, std::move(name));
    }
    return upload_words(ctx, kv_quantize(quant, values, row_values), std::move(name));
}

std::vector<float> download_tensor(Context& ctx, const DeviceTensor& tensor) {
    std::vector<float> out(tensor.elements());
    if (tensor.dtype() == DType::F16) {
        std::vector<std::uint16_t> halves(out.size());
        ctx.download(tensor.buffer(), std::span(halves), tensor.range().offset);
        halves_to_floats(halves, out);
    } else if (tensor.dtype() == DType::F32) {
        ctx.download(tensor.buffer(), std::span(out), tensor.range().offset);
    } else {
        throw Error("download_tensor '" + tensor.buffer().name() + "': its elements are not floats");
    }
    return out;
}

void upload_repeated(Context& ctx, const Buffer& buffer, std::span<const float> block, DType dtype,
                     std::uint64_t elements) {
    if (block.empty() || (dtype != DType::F32 && dtype != DType::F16)) {
        throw Error("upload_repeated '" + buffer.name() + "': needs a block of values and dtype f32 or f16");
    }
    const std::vector<std::uint16_t> halves =
        dtype == DType::F16 ? floats_to_halves(block) : std::vector<std::uint16_t>{};
    const std::span<const std::byte> bytes =
        dtype == DType::F16 ? std::as_bytes(std::span<const std::uint16_t>(halves)) : std::as_bytes(block);
    upload_repeated_bytes(ctx, buffer, bytes, elements * element_size(dtype));
}

void upload_repeated_bytes(Context& ctx, const Buffer& buffer, std::span<const std::byte> pattern,
                           std::uint64_t bytes) {
    if (pattern.empty()) {
        throw Error("upload_repeated_bytes '" + buffer.name() + "': needs a pattern");
    }
    // Whole patterns per piece, so that every piece continues the repetition where the last ended.
    const std::size_t copies = std::max<std::size_t>(1, (std::size_t{4} << 20) / pattern.size());
    std::vector<std::byte> piece;
    piece.reserve(copies * pattern.size());
    for (std::size_t i = 0; i < copies; ++i) {
        piece.insert(piece.end(), pattern.begin(), pattern.end());
    }
    for (std::uint64_t done = 0; done < bytes; done += piece.size()) {
        const std::uint64_t n = std::min<std::uint64_t>(piece.size(), bytes - done);
        ctx.upload(buffer, std::span<const std::byte>(piece.data(), n), done);
    }
}

void poison(Context& ctx, const Buffer& buffer) {
    const std::vector<std::byte> nan(buffer.size(), std::byte{0xFF});
    ctx.upload(buffer, std::span<const std::byte>(nan));
}

DeviceTensor nan_tensor(Context& ctx, std::uint64_t elements, DType dtype, std::string name, std::uint32_t pad) {
    DeviceTensor tensor(ctx, elements, dtype, std::move(name), pad);
    poison(ctx, tensor.buffer());
    return tensor;
}

}  // namespace vkf
