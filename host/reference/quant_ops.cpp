#include "host/reference/quant_ops.hpp"

#include "base/error.hpp"
#include "host/reference/ops.hpp"
#include "host/util/half.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace vkf::reference {

namespace {
constexpr std::uint32_t kBlock = 32;
}  // namespace

Int8Activations quantize_activations(std::span<const float> x, std::uint32_t m, std::uint32_t k) {
    if (k % kBlock != 0 || x.size() < std::size_t{m} * k) {
        throw Error("quantize_activations: k = " + fmt::to_string(k) + " must be a multiple of 32 and x hold m * k");
    }
    const std::uint32_t blocks = k / kBlock;
    Int8Activations out{std::vector<std::int8_t>(std::size_t{m} * k), std::vector<float>(std::size_t{m} * blocks),
                        std::vector<std::int32_t>(std::size_t{m} * blocks)};
    for (std::size_t b = 0; b < std::size_t{m} * blocks; ++b) {
        const float* v = x.data() + b * kBlock;
        float amax = 0.0f;
        for (std::uint32_t i = 0; i < kBlock; ++i) {
            amax = std::max(amax, std::fabs(v[i]));
        }
        const float d = amax / 127.0f;
        const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
        std::int32_t sum = 0;
        for (std::uint32_t i = 0; i < kBlock; ++i) {
            const float q = std::clamp(std::nearbyint(v[i] * inv), -127.0f, 127.0f);
            out.values[b * kBlock + i] = static_cast<std::int8_t>(q);
            sum += static_cast<std::int32_t>(q);
        }
        out.scales[b] = d;
        out.sums[b] = sum;
    }
    return out;
}

std::vector<double> matmul_int8_activations(QuantFormat format, std::span<const float> x,
                                            std::span<const std::uint8_t> values, std::span<const std::uint16_t> scales,
                                            std::span<const float> bias, std::span<const float> residual,
                                            std::uint32_t m, std::uint32_t n, std::uint32_t k, Activation activation,
                                            std::vector<double>* magnitude) {
    if (format != QuantFormat::Q8_0 && format != QuantFormat::Q4_0) {
        throw Error("matmul_int8_activations: q8_0 or q4_0 weights only");
    }
    const Int8Activations xq = quantize_activations(x, m, k);
    const std::uint32_t blocks = k / kBlock;
    const std::uint64_t row_bytes = quant_row_bytes(format, k);
    const std::uint32_t block_bytes = quant_block_bytes(format);
    std::vector<double> y(std::size_t{m} * n);
    if (magnitude != nullptr) {
        magnitude->assign(y.size(), 0.0);
    }
    for (std::uint32_t r = 0; r < m; ++r) {
        for (std::uint32_t c = 0; c < n; ++c) {
            double acc = 0.0, mag = 0.0;
            for (std::uint32_t b = 0; b < blocks; ++b) {
                const std::uint8_t* wb = values.data() + c * row_bytes + std::size_t{b} * block_bytes;
                const std::int8_t* xb = xq.values.data() + std::size_t{r} * k + std::size_t{b} * kBlock;
                std::int64_t dot = 0;
                for (std::uint32_t i = 0; i < kBlock; ++i) {
                    std::int32_t w = 0;
                    if (format == QuantFormat::Q8_0) {
                        w = static_cast<std::int8_t>(wb[i]);
                    } else {
                        w = static_cast<std::int32_t>(i < 16 ? (wb[i] & 0xF) : (wb[i - 16] >> 4)) - 8;
                    }
                    dot += std::int64_t{w} * xb[i];
                }
                const double term = static_cast<double>(half_to_float(scales[std::size_t{c} * blocks + b])) *
                                    static_cast<double>(xq.scales[std::size_t{r} * blocks + b]) *
                                    static_cast<double>(dot);
                acc += term;
                mag += std::fabs(term);
            }
            double v = acc + (bias.empty() ? 0.0 : static_cast<double>(bias[c]));
            v = reference::activation(activation, v);
            if (!residual.empty()) {
                v += residual[std::size_t{r} * n + c];
            }
            y[std::size_t{r} * n + c] = v;
            if (magnitude != nullptr) {
                (*magnitude)[std::size_t{r} * n + c] = mag;
            }
        }
    }
    return y;
}

}  // namespace vkf::reference
