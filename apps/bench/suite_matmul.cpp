// The matmul suite: the presets' linear layers (QKV, attention output, FFN up and down, LM
// head) with f16 weights, at m = 1 (decoding) and the prefill rows.

#include "apps/bench/suites.hpp"

#include "host/ops/matmul.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vkf::bench {

namespace {

struct Linear {
    std::string layer;
    std::uint32_t n, k;
};

struct LinearPreset {
    std::string name;
    std::vector<Linear> layers;
};

// Y[m, n] = X[m, k] . W[n, k]^T for each weight of a block, and the LM head.
std::vector<LinearPreset> linear_presets() {
    const auto layers = [](std::uint32_t hidden, std::uint32_t ffn, std::uint32_t vocab) {
        return std::vector<Linear>{{"qkv", 3 * hidden, hidden},
                                   {"attn_out", hidden, hidden},
                                   {"ffn_up", ffn, hidden},
                                   {"ffn_down", hidden, ffn},
                                   {"lm_head", vocab, hidden}};
    };
    return {{"bloom-560m", layers(1024, 4096, 250880)}, {"mpt-7b", layers(4096, 16384, 50432)}};
}

}  // namespace

std::vector<BenchCase> matmul_cases(const Context& ctx, const SuiteSettings& s) {
    std::vector<BenchCase> cases;
    for (const LinearPreset& preset : linear_presets()) {
        if (std::find(s.presets.begin(), s.presets.end(), preset.name) == s.presets.end()) {
            continue;
        }
        std::vector<std::uint32_t> ms = {1};
        ms.insert(ms.end(), s.prefill_m.begin(), s.prefill_m.end());
        for (const std::uint32_t m : ms) {
            for (const Linear& layer : preset.layers) {
                // The LM head of a prefill is a decode's on the last row alone: m = 1 only.
                if (layer.layer == "lm_head" && m != 1) {
                    continue;
                }
                const DType wdtype = DType::F16;
                // Each case in the arithmetic the plan chooses, and where the device has fp16
                // arithmetic and forcing the other one changes the plan, in that one too, as
                // "<name> f16 math" or "<name> f32 math" (MatmulArithmetic).
                const MatmulDevice device = matmul_device(ctx);
                const bool chosen = plan_matmul(device, m, layer.n, layer.k, wdtype).f16_arithmetic;
                MatmulOptions other{.arithmetic = chosen ? MatmulArithmetic::F32 : MatmulArithmetic::F16};
                std::vector<std::pair<MatmulOptions, bool>> runs = {{MatmulOptions{}, chosen}};
                if (plan_matmul(device, m, layer.n, layer.k, wdtype, other).f16_arithmetic != chosen) {
                    runs.emplace_back(other, !chosen);
                }
                for (const auto& [options, f16_math] : runs) {
                    BenchCase c;
                    c.name = fmt::format("{} {} m={} n={} k={} {}{}", preset.name, layer.layer, m, layer.n, layer.k,
                                         to_string(wdtype),
                                         options.arithmetic == MatmulArithmetic::Auto ? ""
                                         : f16_math                                   ? " f16 math"
                                                                                      : " f32 math");
                    c.params = {{"model", preset.name},
                                {"layer", layer.layer},
                                {"weights", std::string(to_string(wdtype))},
                                {"m", std::int64_t{m}},
                                {"n", std::int64_t{layer.n}},
                                {"k", std::int64_t{layer.k}},
                                {"arithmetic", std::string(f16_math ? "f16" : "f32")}};
                    const std::uint64_t wbytes = std::uint64_t{layer.n} * layer.k * element_size(wdtype);
                    c.flops = 2ull * m * layer.n * layer.k;
                    c.bytes = std::uint64_t{m} * layer.k * 4 + wbytes + std::uint64_t{m} * layer.n * 4;
                    c.run = [m, layer, wdtype, wbytes, options](CaseEnv& env, Result& r) {
                        Context& ctx = env.ctx;
                        const MatmulPlan plan = plan_matmul(matmul_device(ctx), m, layer.n, layer.k, wdtype, options);
                        const std::uint64_t x_bytes = std::uint64_t{m} * layer.k * 4;
                        const std::uint64_t y_bytes = std::uint64_t{m} * layer.n * 4;
                        const std::uint64_t scratch = plan.scratch_bytes;
                        check_memory(ctx, env.settings, x_bytes + wbytes + y_bytes + scratch,
                                     std::max({x_bytes, wbytes, y_bytes, scratch}));
                        const Buffer x = random_buffer(ctx, x_bytes, false, 0x5eed11, "bench X");
                        const Buffer w = random_buffer(ctx, wbytes, wdtype == DType::F16, 0x5eed12, "bench W");
                        const Buffer y = ctx.create_buffer(y_bytes, MemoryKind::Device, "bench Y");
                        std::optional<Buffer> scratch_buffer;
                        MatmulArgs args{.x = whole(x),
                                        .w = whole(w),
                                        .y = whole(y),
                                        .m = m,
                                        .n = layer.n,
                                        .k = layer.k,
                                        .weight_dtype = wdtype,
                                        .options = options};
                        if (scratch != 0) {
                            scratch_buffer.emplace(ctx.create_buffer(scratch, MemoryKind::Device, "bench scratch"));
                            args.scratch = whole(*scratch_buffer);
                        }
                        const auto list = ctx.command_list(ctx.limits().timestamps);
                        record_matmul(ctx, *list, plan, args);
                        r.reps_ms = time_list(ctx, *list, env.settings.warmup, env.settings.reps);
                        r.plan = plan.describe();
                        r.flops = 2ull * m * layer.n * layer.k;
                        r.bytes = x_bytes + wbytes + y_bytes;
                    };
                    cases.push_back(std::move(c));
                }
            }
        }
    }
    return cases;
}

}  // namespace vkf::bench
