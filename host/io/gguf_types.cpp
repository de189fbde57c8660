// GGUF's value types, ggml's tensor types and the accessors of a metadata value.

#include "host/io/gguf.hpp"

#include <array>
#include <limits>

#include <fmt/format.h>

#include "base/error.hpp"

namespace vkf {
namespace {

struct TypeRow {
    GgmlType type;
    GgmlTypeTraits traits;
};

// ggml.c's type_traits (blck_size, type_size); gguf-py's GGML_QUANT_SIZES lists the same.
constexpr std::array kGgmlTypes = {
    TypeRow{GgmlType::F32, {"F32", 1, 4}},
    TypeRow{GgmlType::F16, {"F16", 1, 2}},
    TypeRow{GgmlType::Q4_0, {"Q4_0", 32, 18}},
    TypeRow{GgmlType::Q4_1, {"Q4_1", 32, 20}},
    TypeRow{GgmlType::Q5_0, {"Q5_0", 32, 22}},
    TypeRow{GgmlType::Q5_1, {"Q5_1", 32, 24}},
    TypeRow{GgmlType::Q8_0, {"Q8_0", 32, 34}},
    TypeRow{GgmlType::Q8_1, {"Q8_1", 32, 36}},
    TypeRow{GgmlType::Q2_K, {"Q2_K", 256, 84}},
    TypeRow{GgmlType::Q3_K, {"Q3_K", 256, 110}},
    TypeRow{GgmlType::Q4_K, {"Q4_K", 256, 144}},
    TypeRow{GgmlType::Q5_K, {"Q5_K", 256, 176}},
    TypeRow{GgmlType::Q6_K, {"Q6_K", 256, 210}},
    TypeRow{GgmlType::Q8_K, {"Q8_K", 256, 292}},
    TypeRow{GgmlType::IQ2_XXS, {"IQ2_XXS", 256, 66}},
    TypeRow{GgmlType::IQ2_XS, {"IQ2_XS", 256, 74}},
    TypeRow{GgmlType::IQ3_XXS, {"IQ3_XXS", 256, 98}},
    TypeRow{GgmlType::IQ1_S, {"IQ1_S", 256, 50}},
    TypeRow{GgmlType::IQ4_NL, {"IQ4_NL", 32, 18}},
    TypeRow{GgmlType::IQ3_S, {"IQ3_S", 256, 110}},
    TypeRow{GgmlType::IQ2_S, {"IQ2_S", 256, 82}},
    TypeRow{GgmlType::IQ4_XS, {"IQ4_XS", 256, 136}},
    TypeRow{GgmlType::I8, {"I8", 1, 1}},
    TypeRow{GgmlType::I16, {"I16", 1, 2}},
    TypeRow{GgmlType::I32, {"I32", 1, 4}},
    TypeRow{GgmlType::I64, {"I64", 1, 8}},
    TypeRow{GgmlType::F64, {"F64", 1, 8}},
    TypeRow{GgmlType::IQ1_M, {"IQ1_M", 256, 56}},
    TypeRow{GgmlType::BF16, {"BF16", 1, 2}},
    TypeRow{GgmlType::TQ1_0, {"TQ1_0", 256, 54}},
    TypeRow{GgmlType::TQ2_0, {"TQ2_0", 256, 66}},
    TypeRow{GgmlType::MXFP4, {"MXFP4", 32, 17}},
    TypeRow{GgmlType::NVFP4, {"NVFP4", 64, 36}},
    TypeRow{GgmlType::Q1_0, {"Q1_0", 128, 18}},
    TypeRow{GgmlType::Q2_0, {"Q2_0", 64, 18}},
};

[[noreturn]] void wrong_kind(const GgufValue& value, std::string_view wanted) {
    throw Error(fmt::format("expected {}, got a value of type {}", wanted, gguf_value_type_name(value.type)));
}

}  // namespace

std::string_view gguf_value_type_name(GgufValueType type) {
    switch (type) {
        case GgufValueType::U8:
            return "uint8";
        case GgufValueType::I8:
            return "int8";
        case GgufValueType::U16:
            return "uint16";
        case GgufValueType::I16:
            return "int16";
        case GgufValueType::U32:
            return "uint32";
        case GgufValueType::I32:
            return "int32";
        case GgufValueType::F32:
            return "float32";
        case GgufValueType::Bool:
            return "bool";
        case GgufValueType::String:
            return "string";
        case GgufValueType::Array:
            return "array";
        case GgufValueType::U64:
            return "uint64";
        case GgufValueType::I64:
            return "int64";
        case GgufValueType::F64:
            return "float64";
    }
    return "unknown";
}

std::optional<GgmlTypeTraits> ggml_type_traits(std::uint32_t type) {
    for (const TypeRow& row : kGgmlTypes) {
        if (static_cast<std::uint32_t>(row.type) == type) {
            return row.traits;
        }
    }
    return std::nullopt;
}

std::string_view ggml_type_name(GgmlType type) {
    const auto traits = ggml_type_traits(static_cast<std::uint32_t>(type));
    return traits ? traits->name : std::string_view("unknown");
}

bool GgufValue::is_integer() const {
    return std::holds_alternative<std::uint64_t>(value) || std::holds_alternative<std::int64_t>(value);
}

std::uint64_t GgufValue::as_uint64() const {
    if (const auto* u = std::get_if<std::uint64_t>(&value)) {
        return *u;
    }
    if (const auto* i = std::get_if<std::int64_t>(&value)) {
        if (*i < 0) {
            throw Error(fmt::format("expected a non-negative integer, got {}", *i));
        }
        return static_cast<std::uint64_t>(*i);
    }
    wrong_kind(*this, "an integer");
}

std::int64_t GgufValue::as_int64() const {
    if (const auto* i = std::get_if<std::int64_t>(&value)) {
        return *i;
    }
    if (const auto* u = std::get_if<std::uint64_t>(&value)) {
        if (*u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
            throw Error(fmt::format("integer {} does not fit int64", *u));
        }
        return static_cast<std::int64_t>(*u);
    }
    wrong_kind(*this, "an integer");
}

double GgufValue::as_double() const {
    if (const auto* d = std::get_if<double>(&value)) {
        return *d;
    }
    if (const auto* u = std::get_if<std::uint64_t>(&value)) {
        return static_cast<double>(*u);
    }
    if (const auto* i = std::get_if<std::int64_t>(&value)) {
        return static_cast<double>(*i);
    }
    wrong_kind(*this, "a number");
}

bool GgufValue::as_bool() const {
    if (const auto* b = std::get_if<bool>(&value)) {
        return *b;
    }
    wrong_kind(*this, "a bool");
}

const std::string& GgufValue::as_string() const {
    if (const auto* s = std::get_if<std::string>(&value)) {
        return *s;
    }
    wrong_kind(*this, "a string");
}

const std::vector<GgufValue>& GgufValue::as_array() const {
    if (const auto* a = std::get_if<std::vector<GgufValue>>(&value)) {
        return *a;
    }
    wrong_kind(*this, "an array");
}

std::vector<std::uint64_t> GgufTensorInfo::shape() const {
    return {dims.rbegin(), dims.rend()};
}

std::uint64_t GgufTensorInfo::element_count() const {
    std::uint64_t count = 1;
    for (const std::uint64_t dim : dims) {
        count *= dim;  // cannot overflow: open_gguf bounded the byte size by the file's
    }
    return count;
}

}  // namespace vkf
