#pragma once
// Runs the cases of the chosen suites on one device, in registry order, into a Run: the
// same for `vkf-bench run` and `vkf-bench attention`. A case the device cannot run is
// recorded as skipped, one that throws as failed, and after a lost device the rest are
// failed without running.

#include "apps/bench/progress.hpp"
#include "apps/bench/results.hpp"
#include "apps/bench/suites.hpp"

#include <string>
#include <vector>

namespace vkf::bench {

// Runs the cases of `suites` (registry order: "ceilings" first, since the others are placed
// against the ceilings it measures) into a Run, with progress on stderr and, when
// print_table, the table on stdout as results arrive. `command_line` goes into the Run.
Run run_suites(Context& ctx, const SuiteSettings& settings, const std::vector<std::string>& suites,
               const std::string& command_line, ProgressMode progress, bool print_table);

// 0, or 1 with the reason on stderr when a case failed or the validation layer spoke.
int run_exit_status(const Context& ctx, const Run& run);

}  // namespace vkf::bench
