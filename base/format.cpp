#include "base/format.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace vkf {

std::string fixed(double v, int decimals) {
    return fmt::format("{:.{}f}", v, decimals);
}

std::string significant(double v) {
    if (v <= 0.0 || !std::isfinite(v)) {
        return fixed(v, 0);
    }
    const int magnitude = static_cast<int>(std::floor(std::log10(v)));
    return fixed(v, std::clamp(2 - magnitude, 0, 8));
}

std::string size_text(std::uint64_t bytes) {
    static constexpr std::array<const char*, 5> units = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    std::size_t unit = 0;
    std::uint64_t scale = 1;
    while (unit + 1 < units.size() && bytes >= scale * 1024) {
        scale *= 1024;
        ++unit;
    }
    if (bytes % scale == 0) {
        return fmt::format("{} {}", bytes / scale, units[unit]);
    }
    return fmt::format("{:.2f} {}", static_cast<double>(bytes) / static_cast<double>(scale), units[unit]);
}

std::string size_with_bytes(std::uint64_t bytes) {
    return bytes < 1024 ? size_text(bytes) : fmt::format("{} ({})", size_text(bytes), bytes);
}

std::string count_text(std::uint64_t n, std::string_view noun) {
    return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

std::string shape_text(std::initializer_list<std::uint64_t> dims, std::string_view dtype) {
    const std::string shape = fmt::format("[{}]", fmt::join(dims, ", "));
    return dtype.empty() ? shape : fmt::format("{} {}", shape, dtype);
}

}  // namespace vkf
