// The ceilings suite: what the device itself can do, measured with the small kernels of
// shaders/bench_ceilings.comp. The FMA kernels calibrate their size until one submission
// takes long enough to time well, so the same run suits lavapipe and a large GPU.

#include "apps/bench/suites.hpp"

#include "base/error.hpp"
#include "base/format.hpp"
#include "host/ops/elementwise.hpp"
#include "shaders/interface/bench_ceilings.h"
#include "shaders/variants.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string_view>
#include <vector>

namespace vkf::bench {

namespace {

// CeilingPush (push constants): shaders/interface/bench_ceilings.h.
static_assert(sizeof(CeilingPush) == 16);

constexpr std::uint64_t kFlopsPerIteration = 64;  // 8 vec4 fmas, 2 flops each

std::uint32_t workgroup_size(const Context& ctx) {
    return std::min<std::uint32_t>(256, ctx.limits().workgroup_invocations);
}

// kernel: the variant's define (COPY, FMA_F32, FMA_F16, EMPTY).
const Pipeline& pipeline_for(Context& ctx, const char* kernel) {
    return ctx.pipeline(PipelineDesc{.code = &shaders::variant("bench_ceilings", {kernel}),
                                     .workgroup_size = {workgroup_size(ctx), 1, 1},
                                     .push_constant_layout = CeilingPush::layout,
                                     .binding_count = std::string_view(kernel) == "COPY" ? 2u : 1u});
}

// --- memory bandwidth ---

void run_bandwidth(CaseEnv& env, Result& r) {
    Context& ctx = env.ctx;
    const ComputeLimits& l = ctx.limits();
    // One binding per buffer, so at most maxStorageBufferRange each.
    const std::uint64_t target = env.settings.quick ? (64ull << 20) : (256ull << 20);
    std::uint64_t bytes = std::min<std::uint64_t>(target, l.storage_buffer_range);
    bytes =
        std::min<std::uint64_t>(bytes, std::max<std::uint64_t>(ctx.device_info().max_memory_allocation_size, 1u << 20));
    bytes = bytes / 256 * 256;
    check_memory(ctx, env.settings, 2 * bytes, bytes);
    const Buffer src = ctx.create_buffer(bytes, MemoryKind::Device, "bandwidth src");
    const Buffer dst = ctx.create_buffer(bytes, MemoryKind::Device, "bandwidth dst");
    {
        const auto fill = ctx.command_list();
        record_fill(ctx, *fill, whole(src), 1.25f);
        ctx.submit(*fill);
    }
    const std::uint32_t wg = workgroup_size(ctx);
    const auto words = static_cast<std::uint32_t>(bytes / 16);
    const CeilingPush push{.count = words, .iterations = 0, .a = 0.0f, .b = 0.0f};
    const Binding bindings[] = {{whole(src), Access::Read}, {whole(dst), Access::Write}};
    const auto list = ctx.command_list(l.timestamps);
    list->dispatch(Dispatch{.pipeline = &pipeline_for(ctx, "COPY"),
                            .bindings = bindings,
                            .push_constants = push_bytes(push),
                            .groups = {(words + wg - 1) / wg, 1, 1},
                            .label = "bandwidth copy"});
    r.reps_ms = time_list(ctx, *list, env.settings.warmup, env.settings.reps);
    r.timing = timing_name(ctx);
    r.bytes = 2 * bytes;
    r.plan = fmt::format("copy of {} in vec4 words, workgroup {}", size_text(bytes), wg);
    r.params.push_back({"copy_bytes", static_cast<std::int64_t>(bytes)});
    env.ceilings.bandwidth_gbps = static_cast<double>(r.bytes) / (stats_of(r.reps_ms).median * 1e-3) * 1e-9;
}

// --- FMA rate ---

void run_fma(CaseEnv& env, Result& r, bool f16) {
    Context& ctx = env.ctx;
    const ComputeLimits& l = ctx.limits();
    if (f16 && !l.fp16_arithmetic) {
        if (!ctx.device_info().float16_arithmetic) {
            throw Skip{"the device has no float16 arithmetic (shaderFloat16)"};
        }
        if (ctx.overrides().no_fp16_arithmetic) {
            throw Skip{"float16 arithmetic is turned off by the limit override no_fp16_arithmetic"};
        }
        throw Skip{"float16 arithmetic is avoided on this driver (driver quirk)"};
    }
    const Pipeline& pipeline = pipeline_for(ctx, f16 ? "FMA_F16" : "FMA_F32");
    const std::uint32_t wg = workgroup_size(ctx);
    // Iterations per invocation stay far below the driver's loop limit (llvmpipe: 65535).
    const std::uint32_t max_iterations =
        l.max_loop_iterations != 0 ? std::min<std::uint32_t>(16384, l.max_loop_iterations / 4) : 16384;
    const std::uint32_t max_groups = 1u << 20;  // the runtime splits counts over the device limit
    const std::uint64_t out_floats = std::min<std::uint64_t>(1u << 18, l.storage_buffer_range / 4);
    const Buffer out = ctx.create_buffer(out_floats * 4, MemoryKind::Device, "fma out");
    const Binding bindings[] = {{whole(out), Access::Write}};

    // 65536 invocations from the start: enough to occupy a large GPU before the loop grows.
    std::uint32_t groups = 65536 / wg;
    std::uint32_t iterations = std::min<std::uint32_t>(16, max_iterations);
    const double target_ms = env.settings.quick ? 15.0 : 60.0;
    std::unique_ptr<CommandList> list;
    const auto record = [&] {
        const std::uint64_t invocations = std::uint64_t{groups} * wg;
        const CeilingPush push{.count = static_cast<std::uint32_t>(std::min<std::uint64_t>(invocations, out_floats)),
                               .iterations = iterations,
                               .a = 0.9990234375f,
                               .b = 0.0009765625f};
        list = ctx.command_list(l.timestamps);
        list->dispatch(Dispatch{.pipeline = &pipeline,
                                .bindings = bindings,
                                .push_constants = push_bytes(push),
                                .groups = {groups, 1, 1},
                                .label = f16 ? "fma f16" : "fma f32"});
    };
    // Calibrate: grow the work until one submission takes target_ms, iterations first.
    for (int step = 0; step < 16; ++step) {
        record();
        const double ms = stats_of(time_list(ctx, *list, step == 0 ? 1 : 0, 1)).median;
        if (ms >= target_ms) {
            break;
        }
        double factor = ms > 0.0 ? std::min(16.0, 1.25 * target_ms / ms) : 16.0;
        factor = std::max(factor, 1.5);
        if (iterations < max_iterations) {
            const double grown = std::min<double>(max_iterations, std::ceil(iterations * factor));
            factor /= grown / iterations;
            iterations = static_cast<std::uint32_t>(grown);
        }
        if (factor > 1.01 && groups < max_groups) {
            groups = static_cast<std::uint32_t>(std::min<double>(max_groups, std::ceil(groups * factor)));
        } else if (iterations >= max_iterations && groups >= max_groups) {
            break;
        }
    }
    record();
    r.reps_ms = time_list(ctx, *list, env.settings.warmup, env.settings.reps);
    r.timing = timing_name(ctx);
    r.flops = std::uint64_t{groups} * wg * iterations * kFlopsPerIteration;
    r.plan = fmt::format("{} groups x {} invocations x {} iterations x 32 {} fmas", groups, wg, iterations,
                         f16 ? "f16" : "f32");
    const double gflops = static_cast<double>(r.flops) / (stats_of(r.reps_ms).median * 1e-3) * 1e-9;
    (f16 ? env.ceilings.fp16_gflops : env.ceilings.fp32_gflops) = gflops;
}

// --- dispatch overhead ---

void run_dispatch(CaseEnv& env, Result& r) {
    Context& ctx = env.ctx;
    const std::uint32_t count = env.settings.quick ? 500 : 5000;
    const Buffer dummy = ctx.create_buffer(256, MemoryKind::Device, "dispatch dummy");
    // Written by no invocation (count 0); declared a read so no barriers separate the dispatches.
    const Binding bindings[] = {{whole(dummy), Access::Read}};
    const CeilingPush push{.count = 0, .iterations = 0, .a = 0.0f, .b = 0.0f};
    const Pipeline& pipeline = pipeline_for(ctx, "EMPTY");
    const auto list = ctx.command_list(false);  // timestamps per dispatch would be the overhead measured
    for (std::uint32_t i = 0; i < count; ++i) {
        list->dispatch(Dispatch{.pipeline = &pipeline,
                                .bindings = bindings,
                                .push_constants = push_bytes(push),
                                .groups = {1, 1, 1},
                                .label = "empty"});
    }
    r.reps_ms = time_list(ctx, *list, env.settings.warmup, env.settings.reps);
    r.timing = "host_wall_clock";
    r.plan = fmt::format("{} empty one-workgroup dispatches in one submission", count);
    r.params.push_back({"dispatches", std::int64_t{count}});
    const double per_s = count / (stats_of(r.reps_ms).median * 1e-3);
    r.extra.emplace_back("dispatches_per_s", per_s);
    r.extra.emplace_back("us_per_dispatch", 1e6 / per_s);
    env.ceilings.dispatches_per_s = per_s;
}

// --- host <-> device transfers ---

void run_transfer(CaseEnv& env, Result& r, bool upload) {
    Context& ctx = env.ctx;
    const std::uint64_t bytes = env.settings.quick ? (32ull << 20) : (256ull << 20);
    check_memory(ctx, env.settings, bytes, bytes);
    const Buffer buffer = ctx.create_buffer(bytes, MemoryKind::Device, upload ? "upload" : "download");
    std::vector<std::byte> host(bytes, std::byte{0x3c});
    const auto once = [&] {
        const auto start = std::chrono::steady_clock::now();
        if (upload) {
            ctx.upload(buffer, std::span<const std::byte>(host));
        } else {
            ctx.download(buffer, std::span<std::byte>(host));
        }
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    };
    for (std::uint32_t i = 0; i < env.settings.warmup; ++i) {
        once();
    }
    for (std::uint32_t i = 0; i < env.settings.reps; ++i) {
        r.reps_ms.push_back(once());
    }
    r.timing = "host_wall_clock";
    r.bytes = bytes;
    r.plan =
        fmt::format("Context::{} of {} from pageable host memory", upload ? "upload" : "download", size_text(bytes));
    const double gbps = static_cast<double>(bytes) / (stats_of(r.reps_ms).median * 1e-3) * 1e-9;
    (upload ? env.ceilings.upload_gbps : env.ceilings.download_gbps) = gbps;
}

BenchCase ceiling(std::string name, std::function<void(CaseEnv&, Result&)> run) {
    BenchCase c;
    c.name = std::move(name);
    c.params = {{"ceiling", c.name}};
    c.run = std::move(run);
    return c;
}

}  // namespace

std::vector<BenchCase> ceiling_cases(const Context&, const SuiteSettings&) {
    std::vector<BenchCase> cases;
    cases.push_back(ceiling("memory bandwidth", run_bandwidth));
    cases.push_back(ceiling("fp32 fma", [](CaseEnv& env, Result& r) { run_fma(env, r, false); }));
    cases.push_back(ceiling("fp16 fma", [](CaseEnv& env, Result& r) { run_fma(env, r, true); }));
    cases.push_back(ceiling("dispatch overhead", run_dispatch));
    cases.push_back(ceiling("host to device", [](CaseEnv& env, Result& r) { run_transfer(env, r, true); }));
    cases.push_back(ceiling("device to host", [](CaseEnv& env, Result& r) { run_transfer(env, r, false); }));
    return cases;
}

}  // namespace vkf::bench
