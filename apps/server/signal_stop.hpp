#pragma once
// How vkf-server stops on SIGINT or SIGTERM (docs/SERVER.md "Stopping"). The first signal
// runs the server's stop (once, on a thread of its own): no new connections, every running
// and queued request ended at once (a stream with an error event and [DONE], a whole answer
// with 503), and serve() returns, the process exiting 0. A second signal, or a stop that is
// not done 1.5 s after the first signal, ends the process at once with 128 + that signal's
// number (130 for SIGINT, 143 for SIGTERM), as a shell reports a program killed by it.

#include <pthread.h>
#include <atomic>
#include <chrono>
#include <csignal>
#include <functional>
#include <mutex>
#include <thread>

namespace vkf::server {

inline constexpr std::chrono::milliseconds kStopDeadline{1500};

class SignalStop {
public:
    // `signals`: SIGINT and SIGTERM, blocked in every thread (app::block_stop_signals).
    SignalStop(const sigset_t& signals, bool quiet);
    SignalStop(const SignalStop&) = delete;
    SignalStop& operator=(const SignalStop&) = delete;
    ~SignalStop();

    // While an Armed lives, the first signal runs `stop`; its end (before the objects `stop`
    // uses go) waits for a running stop to return.
    class Armed {
    public:
        explicit Armed(SignalStop& owner) : owner_(owner) {}
        Armed(const Armed&) = delete;
        Armed& operator=(const Armed&) = delete;
        ~Armed() { owner_.disarm(); }

    private:
        SignalStop& owner_;
    };
    // Arms `stop`; false (and nothing armed) when a signal came already: the server should
    // not start listening.
    [[nodiscard]] bool arm(std::function<void()> stop);

private:
    void disarm();
    void wait_for_signals();
    [[noreturn]] void exit_now(int signal, const char* why);

    sigset_t signals_;
    bool quiet_;
    std::mutex mutex_;  // held while `stop_` runs
    std::function<void()> stop_;
    std::atomic<int> first_ = 0;      // the first signal
    std::atomic<bool> done_ = false;  // the destructor runs
    std::thread stopper_;
    std::thread thread_;
};

}  // namespace vkf::server
