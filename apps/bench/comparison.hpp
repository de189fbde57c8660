#pragma once
// `vkf-bench compare A.json B.json ...`: result files side by side (speed ratios against
// the first file) and one SVG plot per suite, written directly (no plotting library).

#include "apps/bench/bench_results.hpp"
#include "apps/bench/bench_suites.hpp"

#include <filesystem>
#include <ostream>
#include <span>
#include <string>
#include <vector>

namespace vkf::bench {

// The result's speed for comparisons (higher is faster): GFLOP/s, else GB/s, else
// dispatches per second, else 1 / median ms; absent unless the result is ok.
std::optional<double> speed_of(const Result& r);

// The side-by-side table: every (suite, case) of any file, a column per file.
void print_comparison(std::ostream& out, std::span<const Run> runs, std::span<const std::string> labels);

// One SVG document: lines (GFLOP/s, else GB/s, against the suite's x_param on a log
// scale, one line per file and series) or bars (speed relative to the first file).
std::string svg_plot(const Suite& suite, std::span<const Run> runs, std::span<const std::string> labels);
// Writes <dir>/vkf-bench-<suite>.svg for every suite with results; returns the paths.
std::vector<std::filesystem::path> write_plots(const std::filesystem::path& dir, std::span<const Run> runs,
                                               std::span<const std::string> labels);

int compare_command(std::span<char* const> args);

} // namespace vkf::bench
