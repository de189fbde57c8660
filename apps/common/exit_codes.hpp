#pragma once
// The exit codes of every vkformer program (run_app in app_main.hpp applies them).

namespace vkf::app {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;      // a vkf::Error or another exception; message on stderr
inline constexpr int kExitUsage = 2;        // a bad command line; message and a hint to --help
inline constexpr int kExitCheckFailed = 3;  // --check found errors above the tolerance

}  // namespace vkf::app
