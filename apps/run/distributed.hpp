#pragma once
// vkf-run under `mpirun -n R` (R > 1): the model split by layers over the ranks (issue 31,
// docs/DISTRIBUTED.md). Every rank checks the handshake, loads only its layers (--split) on
// its own device and runs them; rank 0 reads the prompt, samples and prints what one process
// prints (its RunStages, apps/run/stages.hpp, drive the same paths as one device); a rank
// that fails, dies or stalls ends every rank with an error naming it.

#include "apps/run/options.hpp"
#include "apps/run/stages.hpp"

#include <functional>

namespace vkf::run_cli {

// Whether this build has MPI (vkf_dist); without it run_distributed throws saying so.
bool mpi_built();

// The whole run of one rank: rank 0 runs `drive` over its stages, the others serve theirs;
// the exit status. Throws vkf::Error naming the rank.
int run_distributed(const Options& o, const std::function<int(RunStages&)>& drive);

}  // namespace vkf::run_cli
