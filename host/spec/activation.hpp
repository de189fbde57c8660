#pragma once
// The activations of a transformer MLP, applied after a bias: the matmul epilogue, the
// elementwise op and the CPU references share this enum.

#include <cstdint>

namespace vkf {

// Silu (x sigmoid(x)) gates SwiGLU units only (record_gated_activation); the matmul
// epilogue and record_activation refuse it.
enum class Activation : std::uint32_t { None = 0, GeluTanh = 1, GeluErf = 2, Silu = 3 };

// "none", "gelu_tanh", "gelu_erf", "silu".
const char* to_string(Activation a);

}  // namespace vkf
