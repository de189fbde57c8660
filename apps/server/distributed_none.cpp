// vkf-server in a build without MPI (libopenmpi-dev was not found when it was configured).
#include "apps/server/ranks.hpp"

#include "base/error.hpp"

namespace vkf::server {

bool mpi_built() {
    return false;
}

int serve_ranks(const Options&) {
    throw Error(
        "vkf-server was built without MPI support: it cannot split a model over MPI ranks (install "
        "libopenmpi-dev and openmpi-bin, then configure and build again; docs/DISTRIBUTED.md)");
}

}  // namespace vkf::server
