#pragma once
// Number and column formatting shared by vkf-bench's tables (run, attention, compare).

#include <cstddef>
#include <string>

namespace vkf::bench {

// v with `decimals` digits after the point.
std::string fixed(double v, int decimals);
// Three significant digits without an exponent: lavapipe's 0.00412 TFLOP/s and a large
// GPU's 41.2 read alike.
std::string significant(double v);
// s padded with spaces to `width` columns, on the left when `right` (numbers).
std::string pad(const std::string& s, std::size_t width, bool right = false);

} // namespace vkf::bench
