#pragma once
// The text output of a benchmark run on stdout: the device and settings, then a row per
// result as it arrives (rows are printed while later cases run, so the columns are sized
// from the case names up front), then a summary.

#include "apps/bench/results.hpp"
#include "runtime/context.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace vkf::bench {

class ResultTable {
public:
    // name_width: the longest case name.
    explicit ResultTable(std::size_t name_width);
    // vkformer's version, the device, driver and limits, the timing method, and the titles.
    void print_header(const Context& ctx, const Run& run, std::size_t case_count) const;
    void print_row(const Result& r) const;

private:
    std::size_t name_width_;
};

// Counts of ok, skipped and failed results, what the percentages mean, and (suggest_out)
// how to keep the results for vkf-bench compare.
void print_summary(const Run& run, bool suggest_out);

// The note column of a result: its plan, with the suite's own numbers in front.
std::string result_note(const Result& r);

}  // namespace vkf::bench
