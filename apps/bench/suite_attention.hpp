#pragma once
// What the attention suite times: the tiled ALiBi attention op (host/ops/attention.hpp)
// and the naive three-pass baseline (host/ops/attention_naive.hpp) on seeded random Q, K,
// V with the causal mask and causal ALiBi both model presets use. `vkf-bench run` sweeps
// the presets; `vkf-bench attention` sets up a sweep of its own (any heads, head sizes and
// batch). The cases are attention_cases() in suites.hpp.

#include "host/ops/attention.hpp"
#include "host/util/dtype.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace vkf::bench {

// The attention heads being benchmarked and how their ALiBi slopes are made.
struct AttentionModel {
    std::string name;
    std::uint32_t n_head = 0;
    std::vector<std::uint32_t> head_dims;
    float max_bias = 8.0f;
    std::vector<float> slopes;  // an explicit table (MPT); empty: the paper's formula
};

// bloom-560m (16 heads of 64) and mpt-7b (32 heads of 128, MPT's slope table).
std::vector<AttentionModel> attention_presets();
// The presets among `names`, in the presets' order.
std::vector<AttentionModel> attention_presets_named(const std::vector<std::string>& names);

struct AttentionSweep {
    std::vector<AttentionModel> models;
    std::vector<std::uint32_t> lengths;    // prefill: q_len = kv_len
    std::vector<std::uint32_t> decode_kv;  // decoding: one query row against a KV cache this long
    std::vector<DType> dtypes = {DType::F32, DType::F16};
    std::uint32_t batch = 1;
    // Key window W (AttentionParams::window): each query sees the W keys before it; 0: full.
    std::uint32_t window = 0;
    // The naive baseline is a separate case after each tiled one, which it reports its
    // speed against. Decoding needs no n x n scores, so `vkf-bench run` leaves it out there.
    bool naive_prefill = true;
    bool naive_decode = false;
    // Each shape in one dtype, the dtypes taking turns, so a quick sweep still covers both.
    bool alternate_dtypes = false;
    // Within each model the cheap shapes first: a slow device reports most of the table
    // before it reaches the long prefills (lavapipe needs hours for 8192 tokens).
    bool cheapest_first = false;
    // The kernel the op takes (AttentionOptions::kernel): Auto is the rows kernel on CPU
    // devices, so `--kernel tiled` measures the GPU kernel's variants on lavapipe.
    AttentionKernel kernel = AttentionKernel::Auto;
};

}  // namespace vkf::bench
