#pragma once
// vkf-run --prompt-file: every line a prompt of its own, --parallel of them generating at once
// in one Batch (continuous batching: a queued prompt joins as soon as one finishes), each
// with its own sampling seed (--seed + its index) and stop conditions, so that what a prompt
// generates does not depend on the others. The completions are printed in the file's order,
// each labelled with its line, then the batch's figures: aggregate and per-sequence decode
// tokens/s and the KV blocks in use at the peak.

#include "apps/run/options.hpp"
#include "runtime/context.hpp"

namespace vkf::run_cli {

// Returns the exit status (kExitCheckFailed when --check found a prompt above the tolerance).
int run_prompt_file(Context& ctx, const Options& o);

}  // namespace vkf::run_cli
