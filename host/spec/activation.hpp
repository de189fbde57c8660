#pragma once
// The activations of a transformer MLP, applied after a bias: the matmul epilogue, the
// elementwise op and the CPU references share this enum.

#include <cstdint>

namespace vkf {

enum class Activation : std::uint32_t { None = 0, GeluTanh = 1, GeluErf = 2 };

// "none", "gelu_tanh", "gelu_erf".
const char* to_string(Activation a);

}  // namespace vkf
