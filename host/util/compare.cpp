#include "host/util/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "base/error.hpp"

namespace vkf {
namespace {

double ratio_or_inf(double numerator, double denominator) {
    if (denominator > 0.0) {
        return numerator / denominator;
    }
    return numerator == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
}

}  // namespace

ErrorStats compare_to_reference(std::span<const float> out, std::span<const double> ref) {
    if (out.size() != ref.size()) {
        throw Error("compare_to_reference: output has " + fmt::to_string(out.size()) +
                    " elements but the reference has " + fmt::to_string(ref.size()));
    }
    double max_abs_err = 0.0;
    double max_abs_ref = 0.0;
    double err_squares = 0.0;
    double ref_squares = 0.0;
    std::size_t first_nonfinite = SIZE_MAX;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const double o = static_cast<double>(out[i]);
        if (!std::isfinite(o) || !std::isfinite(ref[i])) {
            if (first_nonfinite == SIZE_MAX) {
                first_nonfinite = i;
            }
            continue;
        }
        const double err = std::abs(o - ref[i]);
        max_abs_err = std::max(max_abs_err, err);
        max_abs_ref = std::max(max_abs_ref, std::abs(ref[i]));
        err_squares += err * err;
        ref_squares += ref[i] * ref[i];
    }

    ErrorStats stats{
        .max_abs_err = max_abs_err,
        .max_abs_ref = max_abs_ref,
        .max_rel = ratio_or_inf(max_abs_err, max_abs_ref),
        .rel_l2 = ratio_or_inf(std::sqrt(err_squares), std::sqrt(ref_squares)),
        .first_nonfinite = first_nonfinite,
    };
    if (first_nonfinite != SIZE_MAX) {
        const double inf = std::numeric_limits<double>::infinity();
        stats.max_abs_err = inf;
        stats.max_rel = inf;
        stats.rel_l2 = inf;
    }
    return stats;
}

double tolerance(DType dtype) {
    return dtype == DType::F16 ? 2e-3 : 1e-5;
}

std::string describe(const ErrorStats& stats) {
    std::string result = fmt::format("max_rel {:.3g}, rel_l2 {:.3g}, max_abs_err {:.3g}, max_abs_ref {:.3g}",
                                     stats.max_rel, stats.rel_l2, stats.max_abs_err, stats.max_abs_ref);
    if (stats.first_nonfinite != SIZE_MAX) {
        result += ", first non-finite at index " + fmt::to_string(stats.first_nonfinite);
    }
    return result;
}

}  // namespace vkf
