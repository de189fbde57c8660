#pragma once
// The double-precision reference of pooling (host/spec/pooling.hpp): the mean over the rows of
// [rows, dim] or its first row, optionally divided by its L2 norm (max(|x|, 1e-12), as
// torch.nn.functional.normalize). Pooling::None returns the rows as they are, each normalized
// with `normalize`.

#include "host/spec/pooling.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace vkf::reference {

// Returns [dim] (Mean, Cls) or [rows, dim] (None). Throws vkf::Error for rows == 0 or a
// span of the wrong size.
std::vector<double> pool(std::span<const double> x, std::uint32_t rows, std::uint32_t dim, Pooling pooling,
                         bool normalize);
std::vector<double> pool(std::span<const float> x, std::uint32_t rows, std::uint32_t dim, Pooling pooling,
                         bool normalize);

}  // namespace vkf::reference
