#pragma once
// MPI's lifetime as an object: MPI_Init_thread in the constructor, MPI_Finalize in the
// destructor. Errors come back as return codes (MPI_ERRORS_RETURN on MPI_COMM_WORLD) and
// become vkf::Error naming the call, never MPI's default abort.
//
// A run that failed (a rank died or hung) must not reach MPI_Finalize: it waits for every
// rank, and one of them will never come. The destructor skips it while an exception unwinds
// the stack, or after abandon(); the process then ends the job without finalizing
// (Channel::abort_job; the other ranks have been told which rank failed by then).

#include "host/dist/launch.hpp"

#include <string_view>

namespace vkf::dist {

class MpiEnvironment {
public:
    MpiEnvironment();
    ~MpiEnvironment();
    MpiEnvironment(const MpiEnvironment&) = delete;
    MpiEnvironment& operator=(const MpiEnvironment&) = delete;

    int rank() const { return rank_; }
    int size() const { return size_; }
    // Skip MPI_Finalize on the way out (a peer failed).
    void abandon() { abandoned_ = true; }

private:
    int rank_ = 0;
    int size_ = 1;
    bool abandoned_ = false;
};

// Throws vkf::Error "<call>: <MPI's error text>" unless `code` is MPI_SUCCESS.
void check_mpi(int code, std::string_view call);

}  // namespace vkf::dist
