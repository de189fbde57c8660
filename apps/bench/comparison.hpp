#pragma once
// `vkf-bench compare`'s table: result files from any machines side by side, each case's
// median time per file and its speed relative to the first file.

#include "apps/bench/results.hpp"

#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace vkf::bench {

// The result's speed for comparisons (higher is faster): GFLOP/s, else GB/s, else
// dispatches per second, else 1 / median ms; absent unless the result is ok.
std::optional<double> speed_of(const Result& r);

// The result of `run` with this suite and name, or null.
const Result* find_result(const Run& run, const std::string& suite, const std::string& name);

// (suite, name) of every result in any file: the registry's suite order, within a suite
// the first file's order, then cases only later files have.
std::vector<std::pair<std::string, std::string>> all_cases(std::span<const Run> runs);

// The side-by-side table: the files, their ceilings, then every case with a column per file.
void print_comparison(std::ostream& out, std::span<const Run> runs, std::span<const std::string> labels);

}  // namespace vkf::bench
