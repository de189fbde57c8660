#pragma once
// How a program learns it runs as one of several MPI ranks, without MPI itself: so that a
// build without MPI can refuse `mpirun -n 2 vkf-run ...` instead of running the whole model
// twice.

namespace vkf::dist {

// Whether mpirun (OpenMPI's or a PMI/PMIx launcher's environment) started this process as one
// of several ranks; a program started alone, or by `mpirun -n 1`, runs without MPI.
bool started_by_mpirun_with_ranks();

}  // namespace vkf::dist
