#include "host/dist/mpi_env.hpp"

#include "base/error.hpp"

#include <mpi.h>

#include <exception>
#include <string>

namespace vkf::dist {

void check_mpi(int code, std::string_view call) {
    if (code == MPI_SUCCESS) {
        return;
    }
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw Error(std::string(call) + ": " + std::string(text, static_cast<std::size_t>(length)));
}

MpiEnvironment::MpiEnvironment() {
    // SERIALIZED: the channel's heartbeat thread and the main thread both call MPI, one at a
    // time under the channel's mutex.
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    if (provided < MPI_THREAD_SERIALIZED) {
        MPI_Finalize();
        throw Error(
            "this MPI library does not allow calls from more than one thread (MPI_THREAD_SERIALIZED), "
            "which the ranks' heartbeats need");
    }
    check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
}

MpiEnvironment::~MpiEnvironment() {
    if (abandoned_ || std::uncaught_exceptions() > 0) {
        return;
    }
    MPI_Finalize();
}

}  // namespace vkf::dist
