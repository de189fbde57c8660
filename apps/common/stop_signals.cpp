#include "apps/common/stop_signals.hpp"

#include <pthread.h>
#include <atomic>
#include <csignal>

namespace vkf::app {

namespace {

// Read from other threads too (vkf-run's MPI channel polls it from its heartbeat thread): a
// lock-free atomic is signal-safe and, unlike a volatile sig_atomic_t, free of data races.
std::atomic<int> received{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_stop_signal(int signal) {
    received = signal;
}

}  // namespace

void install_stop_signals() {
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    // No SA_RESTART: getline on stdin returns instead of waiting on. SA_RESETHAND: a second
    // Ctrl-C (during a long load, say) ends the program at once, as by default.
    action.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
}

int stop_signal() {
    return received;
}

int stop_signal_status() {
    const int signal = received.load();
    return signal != 0 ? 128 + signal : 0;
}

sigset_t block_stop_signals() {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    return signals;
}

}  // namespace vkf::app
