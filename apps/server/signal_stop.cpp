#include "apps/server/signal_stop.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>

namespace vkf::server {
namespace {

const char* signal_name(int signal) {
    return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "a signal";
}

}  // namespace

SignalStop::SignalStop(const sigset_t& signals, bool quiet) : signals_(signals), quiet_(quiet) {
    thread_ = std::thread([this] { wait_for_signals(); });
}

SignalStop::~SignalStop() {
    done_ = true;
    // The signals are blocked in every thread: this one stays pending for the waiting thread,
    // which sees done_ and returns.
    pthread_kill(thread_.native_handle(), SIGTERM);
    thread_.join();
    if (stopper_.joinable()) {
        stopper_.join();
    }
}

bool SignalStop::arm(std::function<void()> stop) {
    const std::lock_guard lock(mutex_);
    if (first_ != 0) {
        return false;
    }
    stop_ = std::move(stop);
    return true;
}

void SignalStop::disarm() {
    const std::lock_guard lock(mutex_);
    stop_ = nullptr;
}

void SignalStop::wait_for_signals() {
    int signal = 0;
    while (sigwait(&signals_, &signal) != 0) {
    }
    if (done_) {
        return;
    }
    first_ = signal;
    if (!quiet_) {
        fmt::print(stderr, "vkf-server: {}: stopping (a second signal ends it at once)\n", signal_name(signal));
    }
    // The stop runs beside this thread, which meanwhile answers a second signal at once and
    // keeps the deadline.
    stopper_ = std::thread([this] {
        const std::lock_guard lock(mutex_);
        if (stop_) {
            stop_();
            stop_ = nullptr;
        }
    });
    const auto deadline = std::chrono::steady_clock::now() + kStopDeadline;
    for (;;) {
        const auto left = deadline - std::chrono::steady_clock::now();
        if (left <= std::chrono::steady_clock::duration::zero()) {
            if (done_) {
                return;
            }
            exit_now(signal, "the stop took too long");
        }
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
        const timespec wait{.tv_sec = static_cast<time_t>(ns / 1000000000),
                            .tv_nsec = static_cast<long>(ns % 1000000000)};
        const int second = sigtimedwait(&signals_, nullptr, &wait);
        if (done_) {
            return;
        }
        if (second > 0) {
            exit_now(second, "a second signal");
        }
    }
}

void SignalStop::exit_now(int signal, const char* why) {
    fmt::print(stderr, "vkf-server: {} ({}): exiting now, status {}\n", why, signal_name(signal), 128 + signal);
    std::_Exit(128 + signal);
}

}  // namespace vkf::server
