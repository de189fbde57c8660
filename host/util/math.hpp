#pragma once
// Integer arithmetic the planners and loaders share.

#include <concepts>
#include <cstdint>

namespace vkf {

// ceil(a / b) for b > 0, in 64 bits: callers narrow explicitly where a count must fit 32.
constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// The smallest multiple of `step` >= a, for step > 0.
constexpr std::uint64_t round_up(std::uint64_t a, std::uint64_t step) { return ceil_div(a, step) * step; }

} // namespace vkf
