#pragma once
// Error statistics of a GPU result against the double-precision CPU reference, in the
// two measures docs/DESIGN.md sets tolerances for.

#include "host/util/dtype.hpp"

#include <cstddef>
#include <span>
#include <string>

namespace vkf {

struct ErrorStats {
    double max_abs_err;  // max |out - ref|
    double max_abs_ref;  // max |ref|
    double max_rel;      // max_abs_err / max_abs_ref
    double rel_l2;       // ||out - ref||_2 / ||ref||_2
    // Index of the first element where out or ref is NaN or infinite; SIZE_MAX if none.
    // When there is one, max_abs_err, max_rel and rel_l2 are +inf so that any tolerance
    // check fails.
    std::size_t first_nonfinite;
};

// Throws vkf::Error when the sizes differ. A reference that is all zeros gives relative
// errors of 0 when out is all zeros too and +inf otherwise.
ErrorStats compare_to_reference(std::span<const float> out, std::span<const double> ref);

// The bound docs/DESIGN.md sets on both measures for results stored as `dtype`: 2e-3 for
// F16 storage, 1e-5 otherwise (fp32 storage; arithmetic is fp32 either way).
double tolerance(DType dtype);

// One line for test failure messages, e.g. "max_rel 1.2e-06, rel_l2 3.4e-07, ...".
std::string describe(const ErrorStats& stats);

}  // namespace vkf
