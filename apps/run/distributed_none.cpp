// vkf-run in a build without MPI (libopenmpi-dev was not found when it was configured).
#include "apps/run/distributed.hpp"

#include "base/error.hpp"

namespace vkf::run_cli {

bool mpi_built() {
    return false;
}

int run_distributed(const Options&, const std::function<int(RunStages&)>&) {
    throw Error(
        "MPI support was not built: this vkf-run cannot split a model over MPI ranks (install "
        "libopenmpi-dev and openmpi-bin, then configure and build again; docs/DISTRIBUTED.md)");
}

}  // namespace vkf::run_cli
