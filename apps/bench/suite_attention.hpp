#pragma once
// `vkf-bench attention`: times the tiled ALiBi attention op (host/attention.hpp) against
// the naive three-pass baseline (host/attention_naive.hpp) over a table of shapes, and
// reports GPU time, throughput, device memory and the tile plan, as text or JSON.

#include "apps/common/cli.hpp"
#include "host/ops/attention.hpp"
#include "runtime/context.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace vkf::bench {

// A bad command line: vkf-bench reports it with a hint to --help and exit code 2.
using UsageError = cli::UsageError;

// Runs the benchmark with the arguments that follow "attention". Returns the exit code:
// 0, or 1 when some case failed or the validation layer spoke. Throws UsageError for a
// bad command line and vkf::Error when nothing can run at all (no usable device).
int run_attention(std::span<char* const> args);

// For `vkf-bench run`'s attention suite: the same presets and the same timing.
struct AttentionPreset {
    std::string name;
    std::uint32_t n_head = 0;
    std::uint32_t head_dim = 0;
    float max_bias = 8.0f;
    std::vector<float> slopes; // explicit table (MPT); empty: the paper's formula
};
std::vector<AttentionPreset> attention_presets(); // bloom-560m, mpt-7b

struct AttentionTiming {
    std::optional<std::string> impossible; // the naive op cannot run this shape (scores too big)
    std::vector<double> ms;                // one per timed submission
    std::string plan;                      // the tiled op's plan (empty for the naive op)
    std::uint64_t flops = 0;               // 4 * batch * heads * d per unmasked (query, key) pair
    std::uint64_t io_bytes = 0;            // Q, K, V read and O written once
    std::uint64_t memory_bytes = 0;        // Q, K, V, O and the op's scratch or scores
};

// Causal mask and causal ALiBi with the preset's slopes, seeded random Q, K, V.
AttentionTiming time_attention(Context& ctx, const AttentionPreset& preset, DType dtype, std::uint32_t batch,
                               std::uint32_t q_len, std::uint32_t kv_len, bool naive, std::uint32_t warmup,
                               std::uint32_t reps);
// Work and traffic of one call, for estimates before running.
std::uint64_t attention_case_flops(const AttentionPreset& preset, std::uint32_t batch, std::uint32_t q_len,
                                   std::uint32_t kv_len);
std::uint64_t attention_case_bytes(const AttentionPreset& preset, DType dtype, std::uint32_t batch,
                                   std::uint32_t q_len, std::uint32_t kv_len);

} // namespace vkf::bench
