#include "host/util/dtype.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <array>
#include <string>

namespace vkf {

namespace {

struct DTypeEntry {
    DType dtype;
    const char* lower;
    std::string_view upper;
    std::size_t size;
};

constexpr std::array<DTypeEntry, 15> kDTypes = {{
    {DType::F32, "f32", "F32", 4},
    {DType::F16, "f16", "F16", 2},
    {DType::BF16, "bf16", "BF16", 2},
    {DType::F64, "f64", "F64", 8},
    {DType::F8_E4M3, "f8_e4m3", "F8_E4M3", 1},
    {DType::F8_E5M2, "f8_e5m2", "F8_E5M2", 1},
    {DType::I8, "i8", "I8", 1},
    {DType::U8, "u8", "U8", 1},
    {DType::I16, "i16", "I16", 2},
    {DType::U16, "u16", "U16", 2},
    {DType::I32, "i32", "I32", 4},
    {DType::U32, "u32", "U32", 4},
    {DType::I64, "i64", "I64", 8},
    {DType::U64, "u64", "U64", 8},
    {DType::Bool, "bool", "BOOL", 1},
}};

const DTypeEntry& entry(DType dtype) {
    for (const DTypeEntry& e : kDTypes) {
        if (e.dtype == dtype) {
            return e;
        }
    }
    throw Error("unknown DType value " + fmt::to_string(static_cast<int>(dtype)));
}

}  // namespace

const char* to_string(DType dtype) {
    return entry(dtype).lower;
}
std::string_view dtype_name(DType dtype) {
    return entry(dtype).upper;
}
std::size_t element_size(DType dtype) {
    return entry(dtype).size;
}

std::optional<DType> dtype_from_name(std::string_view name) {
    for (const DTypeEntry& e : kDTypes) {
        if (e.upper == name) {
            return e.dtype;
        }
    }
    return std::nullopt;
}

bool is_supported_float(DType dtype) {
    return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}

}  // namespace vkf
