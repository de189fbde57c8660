#pragma once
// SIGINT (Ctrl-C) and SIGTERM as a request to stop, not a kill: a program that installs this
// ends its generation at the next token, finishes its output line, lets its Context save the
// pipeline cache on the way out, and exits 130 (SIGINT) or 143 (SIGTERM) as a shell expects
// (run_app applies the status). A second signal ends the program at once.

#include <csignal>

namespace vkf::app {

// Installs the handlers (without SA_RESTART: a read of stdin waiting for the next line returns).
void install_stop_signals();

// The signal received since install_stop_signals(), or 0.
int stop_signal();

// 128 + the signal received, as a shell reports a process ended by it; 0 when none came.
int stop_signal_status();

// The other way, for a program whose own thread waits for them (vkf-server's sigwait): blocks
// SIGINT and SIGTERM in the calling thread, and so in every thread it starts afterwards (a
// library's too), and returns that set for the waiting thread.
sigset_t block_stop_signals();

}  // namespace vkf::app
