#pragma once
// `vkf-bench attention`: times the tiled ALiBi attention op (host/attention.hpp) against
// the naive three-pass baseline (host/attention_naive.hpp) over a table of shapes, and
// reports GPU time, throughput, device memory and the tile plan, as text or JSON.

#include <span>
#include <string>

namespace vkf::bench {

// A bad command line: vkf-bench reports it with a hint to --help and exit code 2.
struct UsageError {
    std::string message;
};

// Runs the benchmark with the arguments that follow "attention". Returns the exit code:
// 0, or 1 when some case failed or the validation layer spoke. Throws UsageError for a
// bad command line and vkf::Error when nothing can run at all (no usable device).
int run_attention(std::span<char* const> args);

} // namespace vkf::bench
