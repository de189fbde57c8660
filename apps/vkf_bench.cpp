// vkf-bench: benchmarks of vkformer's kernels on the selected Vulkan device, as aligned
// text tables for people and JSON for result files that compare devices. One subcommand
// per benchmark, so each can grow its own options.

#include "bench_attention.hpp"
#include "runtime/error.hpp"

#include <exception>
#include <iostream>
#include <span>
#include <string>
#include <string_view>

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

constexpr const char* kUsage = R"(usage: vkf-bench <benchmark> [options]

Benchmarks vkformer's kernels on one Vulkan device.

benchmarks:
  attention   tiled (flash) ALiBi attention against the naive three-pass baseline

Run 'vkf-bench <benchmark> --help' for a benchmark's options.
)";

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "vkf-bench: name a benchmark (see --help)\n";
        return kExitUsage;
    }
    const std::string_view benchmark = argv[1];
    if (benchmark == "-h" || benchmark == "--help") {
        std::cout << kUsage;
        return 0;
    }
    if (benchmark != "attention") {
        std::cerr << "vkf-bench: unknown benchmark '" << benchmark << "' (see --help)\n";
        return kExitUsage;
    }
    try {
        return vkf::bench::run_attention(std::span<char* const>(argv + 2, static_cast<std::size_t>(argc - 2)));
    } catch (const vkf::bench::UsageError& e) {
        std::cerr << "vkf-bench attention: " << e.message << " (see vkf-bench attention --help)\n";
        return kExitUsage;
    } catch (const std::exception& e) { // vkf::Error: no device, or one that cannot run anything
        std::cout.flush();
        std::cerr << "vkf-bench attention: error: " << e.what() << '\n';
        return kExitFailure;
    }
}
