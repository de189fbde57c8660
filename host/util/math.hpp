#pragma once
// Integer arithmetic the planners and loaders share.

#include "base/error.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <string>

namespace vkf {

// ceil(a / b) for b > 0, in 64 bits: callers narrow explicitly where a count must fit 32.
constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
    return a / b + (a % b != 0 ? 1 : 0);
}

// The smallest multiple of `step` >= a, for step > 0.
constexpr std::uint64_t round_up(std::uint64_t a, std::uint64_t step) {
    return ceil_div(a, step) * step;
}

// `v` as 32 bits, for counts that must fit (group counts, tile counts); throws vkf::Error
// naming `what` rather than wrapping around.
inline std::uint32_t narrow_u32(std::uint64_t v, const char* what) {
    if (v > std::numeric_limits<std::uint32_t>::max()) {
        throw Error(std::string(what) + " " + fmt::to_string(v) + " does not fit 32 bits");
    }
    return static_cast<std::uint32_t>(v);
}

}  // namespace vkf
