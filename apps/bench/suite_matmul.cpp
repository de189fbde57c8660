// The matmul suite: the presets' linear layers (QKV, attention output, FFN up and down, LM
// head) with the --weights formats (f16 by default), at m = 1 (decoding) and the prefill
// rows, in fp32 and fp16 arithmetic where the device has both; or (--matmul-coopmat) the
// cooperative-matrix kernel forced on the f16 prefill rows.

#include "apps/bench/suites.hpp"

#include "base/error.hpp"
#include "host/ops/matmul.hpp"
#include "host/quant/quant_format.hpp"

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

// One timed matmul: the plan for `options`, random X and weights (quantized: random bytes
// and fp16 scales), no bias.
void run_linear(CaseEnv& env, Result& r, std::uint32_t m, const Linear& layer, DType wdtype, QuantFormat quant,
                const MatmulOptions& options) {
    Context& ctx = env.ctx;
    const MatmulPlan plan = plan_matmul(matmul_device(ctx), m, layer.n, layer.k, wdtype, options, quant);
    const bool quantized = quant != QuantFormat::None;
    const std::uint64_t wbytes = quantized ? std::uint64_t{layer.n} * quant_row_bytes(quant, layer.k)
                                           : std::uint64_t{layer.n} * layer.k * element_size(wdtype);
    const std::uint64_t sbytes = quantized ? std::uint64_t{layer.n} * quant_row_scales(layer.k) * 2 : 0;
    const std::uint64_t x_bytes = std::uint64_t{m} * layer.k * 4;
    const std::uint64_t y_bytes = std::uint64_t{m} * layer.n * 4;
    const std::uint64_t scratch = plan.scratch_bytes;
    check_memory(ctx, env.settings, x_bytes + wbytes + sbytes + y_bytes + scratch,
                 std::max({x_bytes, wbytes, y_bytes, scratch}));
    const Buffer x = random_buffer(ctx, x_bytes, false, 0x5eed11, "bench X");
    const Buffer w = random_buffer(ctx, wbytes, wdtype == DType::F16 && !quantized, 0x5eed12, "bench W");
    std::optional<Buffer> scales;
    const Buffer y = ctx.create_buffer(y_bytes, MemoryKind::Device, "bench Y");
    std::optional<Buffer> scratch_buffer;
    MatmulArgs args{.x = whole(x),
                    .w = whole(w),
                    .y = whole(y),
                    .m = m,
                    .n = layer.n,
                    .k = layer.k,
                    .weight_dtype = wdtype,
                    .options = options,
                    .quant = quant};
    if (quantized) {
        scales.emplace(random_buffer(ctx, sbytes, true, 0x5eed13, "bench W scales"));
        args.scales = whole(*scales);
    }
    if (scratch != 0) {
        scratch_buffer.emplace(ctx.create_buffer(scratch, MemoryKind::Device, "bench scratch"));
        args.scratch = whole(*scratch_buffer);
    }
    const auto list = ctx.command_list(ctx.limits().timestamps);
    record_matmul(ctx, *list, plan, args);
    r.reps_ms = time_list(ctx, *list, env.settings.warmup, env.settings.reps);
    r.plan = plan.describe();
    r.flops = 2ull * m * layer.n * layer.k;
    r.bytes = x_bytes + wbytes + sbytes + y_bytes;
}

// The opt-in cooperative-matrix kernel (MatmulKernel::CoopMat) forced on each f16 layer at
// the prefill rows of at least kCoopMatMinRows (not the LM head, as above), named
// "<case> coopmat" with params kernel "coopmat" and kernel_choice "forced". A run of its own
// (scripts/gpu_proof's bench-matmul-coopmat step), so that a kernel that has never run
// cannot cost the plans' results. Skipped, with the plan's reason, where it cannot run.
std::vector<BenchCase> coopmat_cases(const SuiteSettings& s) {
    std::vector<BenchCase> cases;
    for (const LinearPreset& preset : linear_presets()) {
        if (std::find(s.presets.begin(), s.presets.end(), preset.name) == s.presets.end()) {
            continue;
        }
        for (const std::uint32_t m : s.prefill_m) {
            for (const Linear& layer : preset.layers) {
                if (layer.layer == "lm_head" || m < kCoopMatMinRows) {
                    continue;
                }
                BenchCase c;
                c.name = fmt::format("{} {} m={} n={} k={} f16 coopmat", preset.name, layer.layer, m, layer.n, layer.k);
                c.params = {{"model", preset.name},
                            {"layer", layer.layer},
                            {"weights", std::string("f16")},
                            {"m", std::int64_t{m}},
                            {"n", std::int64_t{layer.n}},
                            {"k", std::int64_t{layer.k}},
                            {"arithmetic", std::string("f16")},
                            {"arithmetic_choice", std::string("plan")},
                            {"kernel", std::string("coopmat")},
                            {"kernel_choice", std::string("forced")}};
                c.flops = 2ull * m * layer.n * layer.k;
                c.bytes = std::uint64_t{m} * layer.k * 4 + std::uint64_t{layer.n} * layer.k * 2 +
                          std::uint64_t{m} * layer.n * 4;
                c.run = [m, layer](CaseEnv& env, Result& r) {
                    const MatmulOptions forced{.kernel = MatmulKernel::CoopMat};
                    const MatmulDevice device = matmul_device(env.ctx);
                    if (device.limits.coopmat_shapes.empty()) {  // short: summaries cut reasons at 60
                        throw Skip{"no VK_NV_cooperative_matrix fp16 shapes on this device"};
                    }
                    try {
                        plan_matmul(device, m, layer.n, layer.k, DType::F16, forced);
                    } catch (const Error& e) {
                        throw Skip{e.what()};
                    }
                    run_linear(env, r, m, layer, DType::F16, QuantFormat::None, forced);
                };
                cases.push_back(std::move(c));
            }
        }
    }
    return cases;
}

}  // namespace

// Cases for each --weights format (f32, f16 and the block formats; default f16). Each case
// runs in the arithmetic its plan chooses and, where the device has fp16 arithmetic and
// forcing the other one changes the plan, in that one too, named "<case> f16 math" or
// "<case> f32 math" (MatmulArithmetic): on GPUs the f16 cases (tiled prefill, GEMV decode)
// and the quantized ones, on lavapipe (fp32 by default) the quantized ones.
// --matmul-kernel forces a kernel on every case (named "<case> <kernel>"; skipped where the
// kernel cannot run it, e.g. GEMV on quantized weights): the GEMV and tiled kernels, and
// their fp16 forms, on lavapipe.
std::vector<BenchCase> matmul_cases(const Context& suite_ctx, const SuiteSettings& s) {
    if (s.matmul_coopmat) {
        return coopmat_cases(s);
    }
    std::vector<BenchCase> cases;
    const MatmulDevice device = matmul_device(suite_ctx);
    const MatmulKernel kernel = s.matmul_kernel;
    const std::string kernel_name = kernel == MatmulKernel::Auto ? std::string() : std::string(" ") + to_string(kernel);
    for (const LinearPreset& preset : linear_presets()) {
        if (std::find(s.presets.begin(), s.presets.end(), preset.name) == s.presets.end()) {
            continue;
        }
        std::vector<std::uint32_t> ms = {1};
        for (const std::uint32_t m : s.prefill_m) {
            if (std::find(ms.begin(), ms.end(), m) == ms.end()) {
                ms.push_back(m);  // --prefill-m 1: decoding alone
            }
        }
        for (const std::string& weights : s.weights) {
            const QuantFormat quant = parse_quant_format(weights).value_or(QuantFormat::None);
            // The bias dtype of quantized weights (there is no bias here).
            const DType wdtype = weights == "f32" ? DType::F32 : DType::F16;
            for (const std::uint32_t m : ms) {
                for (const Linear& layer : preset.layers) {
                    // The LM head of a prefill is a decode's on the last row alone: m = 1 only.
                    if (layer.layer == "lm_head" && m != 1) {
                        continue;
                    }
                    const std::string base =
                        fmt::format("{} {} m={} n={} k={} {}", preset.name, layer.layer, m, layer.n, layer.k, weights);
                    const MatmulOptions own{.kernel = kernel};
                    bool chosen = false;
                    try {
                        chosen = plan_matmul(device, m, layer.n, layer.k, wdtype, own, quant).f16_arithmetic;
                    } catch (const Error& e) {  // a forced kernel that does not read these weights
                        BenchCase c;
                        c.name = base + kernel_name;
                        c.run = [reason = std::string(e.what())](CaseEnv&, Result&) { throw Skip{reason}; };
                        cases.push_back(std::move(c));
                        continue;
                    }
                    const MatmulOptions other{.kernel = kernel,
                                              .arithmetic = chosen ? MatmulArithmetic::F32 : MatmulArithmetic::F16};
                    std::vector<std::pair<MatmulOptions, bool>> runs = {{own, chosen}};
                    if (plan_matmul(device, m, layer.n, layer.k, wdtype, other, quant).f16_arithmetic != chosen) {
                        runs.emplace_back(other, !chosen);
                    }
                    for (const auto& [options, f16_math] : runs) {
                        BenchCase c;
                        const char* math = options.arithmetic == MatmulArithmetic::Auto ? ""
                                           : f16_math                                   ? " f16 math"
                                                                                        : " f32 math";
                        c.name = base + kernel_name + math;
                        c.params = {{"model", preset.name},
                                    {"layer", layer.layer},
                                    {"weights", weights},
                                    {"m", std::int64_t{m}},
                                    {"n", std::int64_t{layer.n}},
                                    {"k", std::int64_t{layer.k}},
                                    {"arithmetic", std::string(f16_math ? "f16" : "f32")},
                                    // "forced": the other arithmetic than the plan's, a comparison row
                                    {"arithmetic_choice", std::string(math[0] == '\0' ? "plan" : "forced")}};
                        if (kernel != MatmulKernel::Auto) {
                            c.params.push_back({"kernel", std::string(to_string(kernel))});
                        }
                        const std::uint64_t wbytes =
                            quant != QuantFormat::None
                                ? std::uint64_t{layer.n} * (quant_row_bytes(quant, layer.k) + layer.k / 32 * 2)
                                : std::uint64_t{layer.n} * layer.k * element_size(wdtype);
                        c.flops = 2ull * m * layer.n * layer.k;
                        c.bytes = std::uint64_t{m} * layer.k * 4 + wbytes + std::uint64_t{m} * layer.n * 4;
                        c.run = [m, layer, wdtype, quant, options](CaseEnv& env, Result& r) {
                            run_linear(env, r, m, layer, wdtype, quant, options);
                        };
                        cases.push_back(std::move(c));
                    }
                }
            }
        }
    }
    return cases;
}

}  // namespace vkf::bench
