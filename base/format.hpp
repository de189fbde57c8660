#pragma once
// Text for numbers, sizes and shapes, the same in every message, table and progress line.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <ranges>
#include <string>
#include <string_view>

namespace vkf {

// v with `decimals` digits after the point.
std::string fixed(double v, int decimals);
// Three significant digits without an exponent: lavapipe's 0.00412 TFLOP/s and a large
// GPU's 41.2 read alike.
std::string significant(double v);
// "64 KiB", "7.63 GiB", "100 bytes": binary units, whole numbers where exact so that the
// powers of two device limits usually are read as such.
std::string size_text(std::uint64_t bytes);
// size_text with the exact count beside it, for limits compared against specifications:
// "32 KiB (32768)"; below 1 KiB the two are the same: "100 bytes".
std::string size_with_bytes(std::uint64_t bytes);
// A count and its noun, with an s when it is not one: "1 device", "3 files".
std::string count_text(std::uint64_t n, std::string_view noun);
// A shape's dimensions: any range of unsigned integers (std::size_t, std::uint64_t, ...).
template <class R>
concept Dimensions = std::ranges::input_range<R> && std::unsigned_integral<std::ranges::range_value_t<R>>;

// "[2, 7, 8, 64]"; "[]" for a 0-d shape. With a dtype: "[2, 7, 8, 64] f16".
template <Dimensions Dims>
std::string shape_text(const Dims& dims) {
    return fmt::format("[{}]", fmt::join(dims, ", "));
}
std::string shape_text(std::initializer_list<std::uint64_t> dims, std::string_view dtype = {});

}  // namespace vkf
