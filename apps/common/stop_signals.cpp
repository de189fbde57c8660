#include "apps/common/stop_signals.hpp"

#include <csignal>

namespace vkf::app {

namespace {

volatile std::sig_atomic_t received = 0;

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
    return received != 0 ? 128 + received : 0;
}

}  // namespace vkf::app
