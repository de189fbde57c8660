#pragma once
// The one element-type enum of vkformer: tensors in files (safetensors defines every type
// below, .npy a subset) and on the device (the GPU ops store F32 or F16 and check that they
// get one of those) name their elements with it.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace vkf {

enum class DType : std::uint8_t { F32, F16, BF16, F64, F8_E4M3, F8_E5M2, I8, U8, I16, U16, I32, U32, I64, U64, Bool };

// "f32", "f16", "bf16", "u8", ...: the spelling of command lines, results and messages.
const char* to_string(DType dtype);
// "F32", "F16", "BF16", "U8", "BOOL", ...: the spelling of safetensors headers.
std::string_view dtype_name(DType dtype);
// The inverse of dtype_name; nullopt for any other text.
std::optional<DType> dtype_from_name(std::string_view name);
// Bytes per element.
std::size_t element_size(DType dtype);
// F32, F16 and BF16: what model weights may be stored as.
bool is_supported_float(DType dtype);

}  // namespace vkf
