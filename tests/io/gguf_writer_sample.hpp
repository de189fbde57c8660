#pragma once
// The GGUF file tests write with write_gguf_file (host/io/gguf_writer.hpp): a key of every
// value type and an array of each, and tensors of F32, F16, Q8_0 and Q4_0 (and a 1-D and a 3-D
// one) whose byte i is (i * 7 + index * 13) mod 256, so that a reader of any language can
// recompute them. test_gguf_writer reads it back with vkformer's reader, gguf_write_compare.py
// with llama.cpp's gguf-py.

#include "host/io/gguf_writer.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace vkf::test {

struct GgufSample {
    std::vector<GgufKeyValue> metadata;
    std::vector<GgufTensorSource> tensors;
};

inline std::byte sample_byte(std::uint64_t i, std::size_t tensor) {
    return static_cast<std::byte>((i * 7 + tensor * 13) % 256);
}

// alignment 0: general.alignment left out (32).
inline GgufSample gguf_writer_sample(std::uint32_t alignment) {
    GgufSample s;
    const auto scalar = [](GgufValueType type, auto value) { return GgufValue{.type = type, .value = value}; };
    const auto array = [](GgufValueType type, std::vector<GgufValue> values) {
        return GgufValue{.type = GgufValueType::Array, .element_type = type, .value = std::move(values)};
    };
    s.metadata = {
        {"general.architecture", gguf_string("bloom")},
        {"test.uint8", scalar(GgufValueType::U8, std::uint64_t{250})},
        {"test.int8", scalar(GgufValueType::I8, std::int64_t{-100})},
        {"test.uint16", scalar(GgufValueType::U16, std::uint64_t{65000})},
        {"test.int16", scalar(GgufValueType::I16, std::int64_t{-30000})},
        {"test.uint32", gguf_uint32(4000000000u)},
        {"test.int32", gguf_int32(-2000000000)},
        {"test.float32", gguf_float32(0.1f)},
        {"test.bool", gguf_bool(true)},
        {"test.string", gguf_string("\u00dcn\u00efc\u00f6d\u00e9 text")},
        {"test.uint64", scalar(GgufValueType::U64, ~std::uint64_t{0})},
        {"test.int64", scalar(GgufValueType::I64, std::int64_t{-(std::int64_t{1} << 62)})},
        {"test.float64", scalar(GgufValueType::F64, 1.0 / 3.0)},
        {"test.array.uint8", array(GgufValueType::U8, {scalar(GgufValueType::U8, std::uint64_t{0}),
                                                       scalar(GgufValueType::U8, std::uint64_t{255})})},
        {"test.array.int32", gguf_int32_array(std::vector<std::int32_t>{-5, 5, 7})},
        {"test.array.float32", array(GgufValueType::F32, {gguf_float32(0.5f), gguf_float32(-1e30f)})},
        {"test.array.bool", array(GgufValueType::Bool, {gguf_bool(true), gguf_bool(false)})},
        {"test.array.string", gguf_string_array({"a", "", "\u0120the\u010a"})},
        {"test.array.float64", array(GgufValueType::F64, {scalar(GgufValueType::F64, 1e300)})},
    };
    if (alignment != 0) {
        s.metadata.push_back({"general.alignment", gguf_uint32(alignment)});
    }
    const struct {
        const char* name;
        std::vector<std::uint64_t> dims;
        GgmlType type;
    } shapes[] = {
        {"t.f32", {64, 6}, GgmlType::F32},   {"t.f16", {64, 6}, GgmlType::F16}, {"t.q8_0", {64, 6}, GgmlType::Q8_0},
        {"t.q4_0", {96, 5}, GgmlType::Q4_0}, {"t.1d", {7}, GgmlType::F32},      {"t.3d", {4, 3, 2}, GgmlType::F16},
    };
    std::size_t index = 0;
    for (const auto& shape : shapes) {
        GgufTensorSource t{.name = shape.name, .dims = shape.dims, .type = shape.type};
        const std::uint64_t row_bytes =
            gguf_tensor_bytes(GgufTensorSource{.name = "", .dims = {shape.dims[0]}, .type = shape.type});
        t.fill = [index, row_bytes](std::uint64_t first, std::uint64_t rows, std::span<std::byte> out) {
            for (std::uint64_t i = 0; i < rows * row_bytes; ++i) {
                out[i] = sample_byte(first * row_bytes + i, index);
            }
        };
        s.tensors.push_back(std::move(t));
        ++index;
    }
    return s;
}

}  // namespace vkf::test
