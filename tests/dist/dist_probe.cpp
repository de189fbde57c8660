// dist_probe: host/dist's channel and handshake without a GPU or a model, for
// tests/dist/dist_test.py under mpirun. Every rank runs the handshake, then a ring of typed
// messages (rank 0 -> 1 -> ... -> 0, the values checked on the way back), ROUNDS times.
//
// usage: mpirun -n R dist_probe [--rank-timeout S] [--rounds N] [--fault RANK:ROUND:ACTION]
//   ACTION: stop (SIGSTOP itself), kill (SIGKILL itself), error (throw), split (a different
//   fingerprint in the handshake). Prints "dist_probe: ok" on rank 0; on a failure every rank
//   prints "dist_probe: rank R of N: <message>" on stderr and exits 1.

#include "host/dist/channel.hpp"
#include "host/dist/handshake.hpp"

#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

// Read by the channel's heartbeat thread too: an atomic (lock-free, so signal-safe), not a
// volatile sig_atomic_t, which another thread may not read (ThreadSanitizer names the race).
std::atomic<int> received{0};
extern "C" void on_signal(int signal) {
    received = signal;
}

struct Fault {
    int rank = -1;
    int round = 0;
    std::string action;
};

int run(vkf::dist::Channel& channel, int rounds, const Fault& fault) {
    const int rank = channel.rank();
    const int size = channel.size();
    const bool mine = fault.rank == rank;
    vkf::dist::Fingerprint fp{.version = "probe", .config = "c", .checkpoint = "k", .split = "auto", .options = ""};
    if (mine && fault.action == "split") {
        fp.split = "1,2";
    }
    const std::string plan = vkf::dist::handshake(channel, fp, [](auto) { return std::string("the plan"); });
    if (plan != "the plan") {
        throw vkf::Error("the plan did not arrive: '" + plan + "'");
    }
    for (int round = 0; round < rounds; ++round) {
        if (mine && round == fault.round) {
            if (fault.action == "stop") {
                std::raise(SIGSTOP);
            } else if (fault.action == "kill") {
                std::raise(SIGKILL);
            } else if (fault.action == "error") {
                throw vkf::Error("the probe's own error");
            }
        }
        const int next = (rank + 1) % size;
        const int previous = (rank + size - 1) % size;
        // Odd lengths, so that a wrong element size shows.
        std::vector<float> values(static_cast<std::size_t>(1000 + round));
        for (std::size_t i = 0; i < values.size(); ++i) {
            values[i] = static_cast<float>(round * 7 + static_cast<int>(i)) * 0.5f;
        }
        if (rank == 0) {
            channel.send_values<float>(next, vkf::dist::Tag::Hidden, values);
            const std::vector<float> back = channel.receive_values<float>(previous, vkf::dist::Tag::Hidden);
            if (back != values) {
                throw vkf::Error(fmt::format("round {}: the ring changed the values", round));
            }
        } else {
            const std::vector<float> got = channel.receive_values<float>(previous, vkf::dist::Tag::Hidden);
            channel.send_values<float>(next, vkf::dist::Tag::Hidden, got);
        }
    }
    if (rank == 0) {
        for (int r = 1; r < size; ++r) {
            channel.send_text(r, vkf::dist::Tag::Command, "stop");
        }
        channel.finish();
        std::printf("dist_probe: ok (%d ranks, %d rounds)\n", size, rounds);
    } else {
        if (channel.receive_text(0, vkf::dist::Tag::Command) != "stop") {
            throw vkf::Error("rank 0 did not say stop");
        }
        channel.finish();
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    double timeout = 5.0;
    int rounds = 50;
    Fault fault;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string option = argv[i];
        if (option == "--rank-timeout") {
            timeout = std::atof(argv[i + 1]);
        } else if (option == "--rounds") {
            rounds = std::atoi(argv[i + 1]);
        } else if (option == "--fault") {
            char action[16] = {};
            if (std::sscanf(argv[i + 1], "%d:%d:%15s", &fault.rank, &fault.round, action) != 3) {
                std::fprintf(stderr, "dist_probe: bad --fault\n");
                return 2;
            }
            fault.action = action;
        }
    }
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, nullptr);
    vkf::dist::MpiEnvironment env;
    vkf::dist::Channel channel(env, {.timeout = std::chrono::milliseconds(static_cast<int>(timeout * 1000)),
                                     .heartbeat = std::chrono::milliseconds(100),
                                     .signal = [] { return received.load(); }});
    // As vkf-run does (apps/run/distributed.cpp): print, wait for the others to print, exit
    // without MPI_Finalize.
    const auto failed = [&](const char* message, bool grace) {
        env.abandon();
        std::fprintf(stderr, "dist_probe: rank %d of %d: %s\n", env.rank(), env.size(), message);
        std::fflush(stderr);
        if (grace) {
            std::this_thread::sleep_for(vkf::dist::kFailureGrace);
        }
        return 1;
    };
    try {
        return run(channel, rounds, fault);
    } catch (const vkf::dist::RankFailure& e) {
        return failed(e.what(), received == 0);
    } catch (const std::exception& e) {
        channel.fail_self(e.what());
        return failed(e.what(), true);
    }
}
