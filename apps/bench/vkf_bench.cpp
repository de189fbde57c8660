// vkf-bench: benchmarks of vkformer on the selected Vulkan device, made to compare GPUs
// of different vendors. `run` measures the device's ceilings and the kernel suites and
// writes a result file; `compare` puts result files from any machines side by side, with
// SVG plots; `attention` is the focused tiled-against-naive attention table.

#include "apps/bench/bench_attention.hpp"
#include "apps/bench/bench_report.hpp"
#include "apps/bench/bench_run.hpp"
#include "apps/common/cli.hpp"
#include "runtime/error.hpp"

#include <exception>
#include <iostream>
#include <span>
#include <string>
#include <string_view>

namespace {

constexpr const char* kUsage = R"(usage: vkf-bench <command> [options]
       vkf-bench [run options]           (same as vkf-bench run ...)

Benchmarks vkformer on one Vulkan device and compares result files across devices.

commands:
  run         device ceilings (bandwidth, FMA rates, dispatch overhead, transfers) and
              the attention and matmul suites, placed against the ceilings; --out FILE
              writes a result file; --quick takes about a minute on lavapipe
  compare     result files side by side, with an SVG plot per suite
  attention   tiled (flash) ALiBi attention against the naive three-pass baseline

Run 'vkf-bench <command> --help' for a command's options.
)";

} // namespace

int main(int argc, char** argv) {
    using vkf::cli::kExitFailure;
    using vkf::cli::kExitUsage;
    if (argc < 2) {
        std::cerr << "vkf-bench: name a command, e.g. vkf-bench run --quick (see --help)\n";
        return kExitUsage;
    }
    std::string_view command = argv[1];
    if (command == "-h" || command == "--help") {
        std::cout << kUsage;
        return 0;
    }
    int first = 2;
    if (command.starts_with("-")) { // options alone: a run
        command = "run";
        first = 1;
    }
    if (command != "attention" && command != "run" && command != "compare") {
        std::cerr << "vkf-bench: unknown command '" << command << "' (see --help)\n";
        return kExitUsage;
    }
    const std::span<char* const> args(argv + first, static_cast<std::size_t>(argc - first));
    try {
        if (command == "attention") {
            return vkf::bench::run_attention(args);
        }
        if (command == "compare") {
            return vkf::bench::compare_command(args);
        }
        return vkf::bench::run_command(args, vkf::cli::join_command_line(argc, argv));
    } catch (const vkf::cli::UsageError& e) {
        std::cerr << "vkf-bench " << command << ": " << e.message << " (see vkf-bench " << command << " --help)\n";
        return kExitUsage;
    } catch (const std::exception& e) { // vkf::Error: no device, an unreadable file...
        std::cout.flush();
        std::cerr << "vkf-bench " << command << ": error: " << e.what() << '\n';
        return kExitFailure;
    }
}
