#pragma once
// Typed point-to-point messages between the ranks of a layer-split run, with liveness.
//
// Every message kind has its own MPI tag (Tag), so a rank receives exactly the kind it
// waits for. Receives and sends are nonblocking calls polled to completion: while a rank
// waits, it keeps servicing the channel, and a heartbeat thread services it the rest of the
// time (while the rank loads weights or waits for its GPU). Servicing means: sending a
// small heartbeat to every peer every `heartbeat` interval, draining the peers' heartbeats,
// and watching the time since each peer was last heard from. A peer silent for longer than
// `timeout` (stopped by SIGSTOP, hung, killed, its host gone) has failed: the rank that notices
// tells every other rank which rank failed and why (Tag::Failure), and every rank's next
// channel call throws RankFailure naming it. A rank whose own run throws reports itself the
// same way (fail_self), so that one rank's error never leaves the others waiting.
//
// MPI's transport (shared memory on one host, TCP or InfiniBand across hosts) carries
// everything; nothing here opens a socket.

#include "base/error.hpp"
#include "host/dist/mpi_env.hpp"

#include <fmt/format.h>

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace vkf::dist {

// One tag per message kind.
enum class Tag : int {
    Heartbeat = 1,  // liveness, no payload worth reading
    Failure = 2,    // int32 failed rank, then the reason's text
    Hello = 3,      // the handshake's fingerprint (JSON text), rank r -> 0
    Verdict = 4,    // the handshake's verdict, 0 -> r: empty when every rank agrees
    Command = 5,    // rank 0 -> r: what the serve loop does next (batch_pipeline.hpp)
    Schedule = 6,   // stage r -> r + 1: the rows of a step
    Hidden = 7,     // stage r -> r + 1: the step's hidden rows, fp32
    Logits = 8,     // last stage -> 0: the logits rank 0 asked for, fp32
};

struct ChannelOptions {
    // A peer silent this long has failed.
    std::chrono::milliseconds timeout{20000};
    // How often a rank tells its peers it is alive.
    std::chrono::milliseconds heartbeat{250};
    // The signal this process received (SIGTERM from mpirun, Ctrl-C), or 0: polled. A signal
    // ends the run as this rank's failure once `signal_grace` has passed without the run
    // ending: meanwhile rank 0 ends its generation at the next token and stops every rank (an
    // interrupted run, not a failure; mpirun forwards Ctrl-C as SIGTERM to every rank).
    std::function<int()> signal;
    // Less than the second mpirun waits before its SIGKILL (OpenMPI's odls_base_sigkill_timeout),
    // so that a rank failing after the signal (a peer died) still prints why.
    std::chrono::milliseconds signal_grace{600};
};

// How long a rank whose run failed waits after printing its error before it ends the job
// without MPI_Finalize (abort_job): every other rank should have printed its own error by then
// (it learns of the failure within a heartbeat interval).
inline constexpr std::chrono::milliseconds kFailureGrace{500};

// A rank failed; every rank's channel throws this, naming it.
class RankFailure : public Error {
public:
    RankFailure(int failed_rank, const std::string& message) : Error(message), failed_rank_(failed_rank) {}
    int failed_rank() const { return failed_rank_; }

private:
    int failed_rank_;
};

class Channel {
public:
    Channel(const MpiEnvironment& env, ChannelOptions options);
    ~Channel();
    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;

    int rank() const { return rank_; }
    int size() const { return size_; }

    // Sends and waits until MPI has taken the bytes (they are copied first: a send cut short
    // by a failure leaves MPI no pointer into the caller's memory).
    void send(int dest, Tag tag, std::span<const std::byte> bytes);
    // Starts a send and returns at once: the channel completes it in the background (the
    // bytes are copied). Messages to one rank with one tag still arrive in order. A rank whose
    // sends to a rank that is itself sending to it must not wait (a pipeline's last stage
    // answering rank 0 while rank 0 sends the next step: host/dist/batch_pipeline.cpp).
    void post(int dest, Tag tag, std::span<const std::byte> bytes);
    template <class T>
    void post_values(int dest, Tag tag, std::span<const T> values) {
        static_assert(std::is_trivially_copyable_v<T>);
        post(dest, tag, std::as_bytes(values));
    }
    // Waits for the next message of this kind from `source`, servicing the channel meanwhile.
    // The wait is bounded by the source's liveness (and by `limit` when given).
    std::vector<std::byte> receive(int source, Tag tag, std::optional<std::chrono::milliseconds> limit = std::nullopt);

    template <class T>
    void send_values(int dest, Tag tag, std::span<const T> values) {
        static_assert(std::is_trivially_copyable_v<T>);
        send(dest, tag, std::as_bytes(values));
    }
    template <class T>
    std::vector<T> receive_values(int source, Tag tag) {
        static_assert(std::is_trivially_copyable_v<T>);
        const std::vector<std::byte> bytes = receive(source, tag);
        if (bytes.size() % sizeof(T) != 0) {
            throw Error("rank " + fmt::to_string(source) + " sent a message of " + fmt::to_string(bytes.size()) +
                        " bytes, not a whole number of " + fmt::to_string(sizeof(T)) + "-byte values");
        }
        std::vector<T> values(bytes.size() / sizeof(T));
        if (!bytes.empty()) {  // an empty message (a step with no logits) has no buffers to copy
            std::memcpy(values.data(), bytes.data(), bytes.size());
        }
        return values;
    }
    void send_text(int dest, Tag tag, const std::string& text);
    std::string receive_text(int source, Tag tag);

    // Throws the failure seen so far, if any (call it between long pieces of work).
    void check();
    // This rank failed on its own (an error thrown by its run): tells every peer, once.
    void fail_self(const std::string& reason);
    // The run ended normally: peers are no longer watched (they may finish first).
    void finish();
    // This rank was sent SIGTERM or SIGINT, which mpirun sends when the job is interrupted and
    // also, about a second later, when a rank died: a peer silent for longer than three
    // heartbeats is taken for dead and becomes the failure (not told to the others: mpirun
    // signals them too). Returns whether one was.
    bool blame_silent_peer();
    // Ends the whole job (MPI_Abort) with this rank's `status`: after a failure, mpirun may
    // not end the other ranks on its own (`--mca orte_abort_on_non_zero_status 0`), and a
    // stopped one would keep it waiting.
    [[noreturn]] void abort_job(int status);

private:
    // A send MPI has not completed; its buffer lives here until it has.
    struct InFlight {
        std::vector<std::byte> bytes;
        MPI_Request request = MPI_REQUEST_NULL;
    };
    // Starts a send; the bytes are moved into in_flight_.
    MPI_Request start_send_locked(int dest, Tag tag, std::vector<std::byte> bytes);
    void service_locked();
    void declare_failure_locked(int failed_rank, const std::string& message, bool notify);
    void throw_if_failed_locked() const;
    // The peer silent longest, when it has been silent for more than three heartbeats; -1 if none.
    int silent_peer_locked(std::chrono::steady_clock::time_point now) const;
    void heartbeat_loop();
    std::string who(int r) const;

    int rank_ = 0;
    int size_ = 1;
    ChannelOptions options_;
    mutable std::mutex mutex_;
    std::vector<std::chrono::steady_clock::time_point> last_heard_;
    std::chrono::steady_clock::time_point last_beat_{};
    std::chrono::steady_clock::time_point last_service_{};
    std::chrono::steady_clock::time_point signal_seen_{};  // when service first saw the signal
    std::deque<InFlight> in_flight_;                       // heartbeats and failure notices (not waited on)
    bool finished_ = false;
    std::optional<RankFailure> failure_;
    std::atomic<bool> stop_{false};
    std::condition_variable wake_;
    std::thread thread_;
};

}  // namespace vkf::dist
