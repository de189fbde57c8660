#pragma once
// What the quantized matmul suites (test_matmul_quant.cpp, test_matmul_quant_int8.cpp)
// share: weights quantized on the host, their upload, and one case run against the
// reference (the dequantized weights, or the int8 path's own reference); and what the fp16
// suites (test_matmul_f16.cpp, test_matmul_coopmat.cpp) share: the fp16-arithmetic bound and
// one dense fp16-weight case.

#include "host/ops/device_tensor.hpp"
#include "host/ops/matmul.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace vkf::test {

// A [rows, k] matrix quantized row by row, and the exact weights it stands for.
struct QuantMatrix {
    std::vector<std::uint8_t> values;
    std::vector<std::uint16_t> scales;
    std::vector<float> dequantized;
};
QuantMatrix quantize(QuantFormat format, std::span<const float> w, std::uint32_t rows, std::uint32_t k);

// An n-row weight made of `q`'s rows repeated, for timing large shapes: the kernels read
// every byte whatever the values.
struct QuantBuffers {
    Buffer values;
    Buffer scales;
};
QuantBuffers repeated_rows(Context& ctx, QuantFormat f, const QuantMatrix& q, std::uint32_t n, std::uint32_t k);

// The values plane as 32-bit words (little-endian, as the device reads it), `pad_words` in.
DeviceTensor upload_values(Context& ctx, std::span<const std::uint8_t> bytes, std::uint32_t pad_words = 0);
// The scales plane (fp16; each converts to float and back exactly), `pad` halves in.
DeviceTensor upload_scales(Context& ctx, std::span<const std::uint16_t> halves, std::uint32_t pad = 0);

struct Case {
    std::uint32_t m, n, k;
    QuantFormat quant = QuantFormat::Q8_0;
    DType bias_dtype = DType::F32;
    bool bias = false;
    bool residual = false;
    Activation activation = Activation::None;
    MatmulOptions options{};
    std::uint32_t pad = 0;    // elements in front of X, bias, residual, Y and scales (odd: unaligned)
    std::uint32_t w_pad = 0;  // words in front of the values (not a multiple of 4: no vector loads)
    float x_range = 1.0f;     // X uniform in [-x_range, x_range] (large activations)
};
std::string name(const Case& c);

// Runs one case on `ctx`, checks it against the reference and returns the plan used.
MatmulPlan run_case(Context& ctx, const Case& c, std::uint64_t seed);

// The fp16-arithmetic bound (docs/DESIGN.md) on every output of act(X W^T + bias) + R:
// |out - ref| <= 1.2 (kF16ErrorUnits u + 2^-13) M + 1e-5 (|ref| + 1), u = 2^-11 (fp16's unit
// roundoff), M = sum over k of |x w| (`magnitude`, the reference on |X| and |W|). Each 8
// products (X rounded to fp16 once, 8 fused multiply-adds) err by at most 9u of their
// magnitudes, rounded to 10u; 2^-13 M covers the fp32 sum of up to 16384 / 8 folds; 1.2 is
// GELU's slope bound (1.13); 1e-5 the fp32 bias, residual and activation.
inline constexpr double kF16ErrorUnits = 10.0;
// Its fp16 part, 1.2 (kF16ErrorUnits u + 2^-13) M, for an output of magnitude M.
double f16_products_bound(double magnitude);
void expect_within_f16_bound(std::span<const float> out, std::span<const double> ref, std::span<const double> magnitude,
                             const std::string& plan);
// Sums over k of |x w| for x [m, k] and w [n, k].
std::vector<double> magnitudes(std::span<const float> x, std::span<const float> w, std::uint32_t m, std::uint32_t n,
                               std::uint32_t k);

// One dense fp16-weight case (test_matmul_f16's tiled and GEMV kernels, test_matmul_coopmat's
// cooperative-matrix kernel).
struct DenseCase {
    std::uint32_t m, n, k;
    bool bias = false;
    bool residual = false;
    Activation activation = Activation::None;
    std::uint32_t splits = 0;
    std::uint32_t pad = 0;  // elements in front of every tensor (odd: unaligned)
    float x_range = 1.0f;   // X uniform in [-x_range, x_range]
    MatmulKernel kernel = MatmulKernel::Tiled;
};
// Runs `c` on its kernel with fp16 arithmetic asked for (Y and the scratch poisoned) and checks
// it against the reference: the fp16-arithmetic bound where the plan takes it, fp32's 1e-5
// where it falls back (VKF_LIMITS=no_fp16_arithmetic); returns the plan used.
MatmulPlan run_dense(Context& ctx, const DenseCase& c, std::uint64_t seed);

Activation activation_of(std::uint32_t i);
QuantFormat format_of(std::uint32_t i);
// Whether the row-dot kernel (subgroup arithmetic) runs here: only where full subgroups of
// a known size can be required.
bool rowdot_runs(const Context& ctx);
// The kernel Auto picks: row dots for up to 4 rows on GPUs with subgroup arithmetic and
// subgroup size control, register blocks otherwise and on CPU devices.
MatmulKernel expected_kernel(Context& ctx, std::uint32_t m);
// 28 cases over odd and prime m and n, k from one block to 33, both formats, both bias
// types, every epilogue, some tensors at unaligned offsets.
std::vector<Case> odd_shape_grid();

}  // namespace vkf::test
