#include "host/dist/launch.hpp"

#include <cstdlib>
#include <initializer_list>

namespace vkf::dist {

bool started_by_mpirun_with_ranks() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
        if (const char* value = std::getenv(name)) {
            return std::atoi(value) > 1;
        }
    }
    return false;
}

}  // namespace vkf::dist
