#pragma once
// `vkf-bench compare`'s plots: one SVG document per suite, written directly (no plotting
// library).

#include "apps/bench/results.hpp"
#include "apps/bench/suites.hpp"

#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace vkf::bench {

// Lines (GFLOP/s, else GB/s, against the suite's x_param on a log scale, one line per file
// and series) or bars (speed relative to the first file, per case).
std::string svg_plot(const Suite& suite, std::span<const Run> runs, std::span<const std::string> labels);
// Writes <dir>/vkf-bench-<suite>.svg for every suite with results; returns the paths.
std::vector<std::filesystem::path> write_plots(const std::filesystem::path& dir, std::span<const Run> runs,
                                               std::span<const std::string> labels);

}  // namespace vkf::bench
