#include "host/reference/pooling.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace vkf::reference {
namespace {

void normalize_row(std::span<double> row) {
    double sq = 0.0;
    for (const double v : row) {
        sq += v * v;
    }
    const double norm = std::max(std::sqrt(sq), kNormalizeEps);
    for (double& v : row) {
        v /= norm;
    }
}

}  // namespace

std::vector<double> pool(std::span<const double> x, std::uint32_t rows, std::uint32_t dim, Pooling pooling,
                         bool normalize) {
    if (rows == 0 || dim == 0 || x.size() != std::size_t{rows} * dim) {
        throw Error("reference pool: x holds " + fmt::to_string(x.size()) + " values, not [" + fmt::to_string(rows) +
                    ", " + fmt::to_string(dim) + "] with both positive");
    }
    std::vector<double> out;
    switch (pooling) {
        case Pooling::None:
            out.assign(x.begin(), x.end());
            if (normalize) {
                for (std::uint32_t r = 0; r < rows; ++r) {
                    normalize_row(std::span(out).subspan(std::size_t{r} * dim, dim));
                }
            }
            return out;
        case Pooling::Mean:
            out.assign(dim, 0.0);
            for (std::uint32_t r = 0; r < rows; ++r) {
                for (std::uint32_t c = 0; c < dim; ++c) {
                    out[c] += x[std::size_t{r} * dim + c];
                }
            }
            for (double& v : out) {
                v /= rows;
            }
            break;
        case Pooling::Cls:
            out.assign(x.begin(), x.begin() + dim);
            break;
        default:
            throw Error("reference pool: unknown pooling " + fmt::to_string(static_cast<std::uint32_t>(pooling)));
    }
    if (normalize) {
        normalize_row(out);
    }
    return out;
}

std::vector<double> pool(std::span<const float> x, std::uint32_t rows, std::uint32_t dim, Pooling pooling,
                         bool normalize) {
    const std::vector<double> wide(x.begin(), x.end());
    return pool(wide, rows, dim, pooling, normalize);
}

}  // namespace vkf::reference
