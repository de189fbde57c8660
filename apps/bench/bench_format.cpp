#include "apps/bench/bench_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace vkf::bench {

std::string fixed(double v, int decimals) {
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, v);
    return buffer;
}

std::string significant(double v) {
    if (v <= 0.0 || !std::isfinite(v)) {
        return fixed(v, 0);
    }
    const int magnitude = static_cast<int>(std::floor(std::log10(v)));
    return fixed(v, std::clamp(2 - magnitude, 0, 8));
}

std::string pad(const std::string& s, std::size_t width, bool right) {
    if (s.size() >= width) {
        return s;
    }
    const std::string spaces(width - s.size(), ' ');
    return right ? spaces + s : s + spaces;
}

} // namespace vkf::bench
