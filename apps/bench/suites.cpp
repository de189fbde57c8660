// The suite registry and the helpers the suites share (each suite is in suite_*.cpp).

#include "apps/bench/suites.hpp"

#include "host/ops/device_tensor.hpp"

#include "base/error.hpp"
#include "base/format.hpp"
#include "host/util/random.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace vkf::bench {

const std::vector<Suite>& suite_registry() {
    static const std::vector<Suite> suites = {
        {.name = "ceilings",
         .description = "device ceilings: memory bandwidth, fp32 and fp16 FMA rate, dispatch overhead, "
                        "host<->device transfers",
         .cases = ceiling_cases,
         .plot = PlotKind::Bars},
        {.name = "attention",
         .description = "tiled ALiBi attention (and the naive baseline), prefill and decode, f32 and f16, "
                        "the model presets",
         .cases = attention_cases,
         .plot = PlotKind::Lines,
         .x_param = "kv_len",
         .series_params = {"model", "mode", "dtype", "impl"}},
        {.name = "matmul",
         .description = "the presets' linear layers (QKV, attention output, FFN up and down, LM head), "
                        "prefill rows and m = 1, f16 weights",
         .cases = matmul_cases,
         .plot = PlotKind::Bars},
        {.name = "block",
         .description = "one transformer block of each preset (synthetic f16 weights): prefill of the prefill "
                        "rows, and one decoding step after them",
         .cases = block_cases,
         .plot = PlotKind::Bars},
        {.name = "model",
         .description = "whole models of the presets (synthetic f16 weights, LM head included): prefill and "
                        "decoding tokens/s",
         .cases = model_cases,
         .plot = PlotKind::Bars},
        {.name = "prefix",
         .description = "the prefix cache (issue 42): a prompt of each prefill length cold, then with one more "
                        "token after it ended, from the cached blocks; warm time, cold time and the share cached",
         .cases = prefix_cases,
         .plot = PlotKind::Bars,
         .by_default = false},
        {.name = "startup",
         .description = "start-up of the presets: pipelines a model needs, their creation time with an empty "
                        "and a warm on-disk pipeline cache, time to first and second token",
         .cases = startup_cases,
         .plot = PlotKind::Bars},
        {.name = "split",
         .description = "a layer split's cost: vkf-run on one device, over 2 and 3 stages in one process "
                        "(--devices) and under mpirun -n 1, 2, 3; decoding time per token, time moving "
                        "activations",
         .cases = split_cases,
         .plot = PlotKind::Bars,
         .by_default = false},
    };
    return suites;
}

const Suite* find_suite(std::string_view name) {
    for (const Suite& s : suite_registry()) {
        if (s.name == name) {
            return &s;
        }
    }
    return nullptr;
}

std::vector<double> time_list(Context& ctx, CommandList& list, std::uint32_t warmup, std::uint32_t reps) {
    for (std::uint32_t i = 0; i < warmup; ++i) {
        ctx.submit(list);
    }
    std::vector<double> times;
    for (std::uint32_t i = 0; i < reps; ++i) {
        const auto start = std::chrono::steady_clock::now();
        ctx.submit(list);
        const std::chrono::duration<double, std::milli> host = std::chrono::steady_clock::now() - start;
        if (list.profiling()) {
            double ms = 0.0;
            for (const OpTiming& t : list.timings()) {
                ms += t.ms;
            }
            times.push_back(ms);
        } else {
            times.push_back(host.count());
        }
    }
    return times;
}

const char* timing_name(const Context& ctx) {
    return ctx.limits().timestamps ? "gpu_timestamps" : "host_wall_clock";
}

std::uint64_t memory_budget(const Context& ctx, const SuiteSettings& s) {
    if (s.max_memory != 0) {
        return s.max_memory;
    }
    std::uint64_t largest = 0;
    for (const MemoryHeapInfo& heap : ctx.device_info().memory_heaps) {
        if (heap.device_local) {
            largest = std::max<std::uint64_t>(largest, heap.size);
        }
    }
    return largest / 2;
}

void check_memory(const Context& ctx, const SuiteSettings& s, std::uint64_t total_bytes, std::uint64_t largest_buffer) {
    const std::uint64_t budget = memory_budget(ctx, s);
    if (total_bytes > budget) {
        throw Skip{fmt::format("needs {} of device memory, over the budget of {} ({})", size_text(total_bytes),
                               size_text(budget),
                               s.max_memory != 0 ? "--max-memory" : "half the device-local heap; --max-memory")};
    }
    const std::uint64_t allocation = ctx.device_info().max_memory_allocation_size;
    if (allocation != 0 && largest_buffer > allocation) {
        throw Skip{fmt::format("a {} buffer exceeds maxMemoryAllocationSize ({})", size_text(largest_buffer),
                               size_text(allocation))};
    }
}

Buffer random_buffer(Context& ctx, std::uint64_t bytes, bool f16, std::uint64_t seed, const char* name) {
    const DType dtype = f16 ? DType::F16 : DType::F32;
    Buffer buffer = ctx.create_buffer(bytes, MemoryKind::Device, name);
    upload_repeated(ctx, buffer, random_uniform(std::size_t{1} << 16, seed), dtype, bytes / element_size(dtype));
    return buffer;
}

}  // namespace vkf::bench
