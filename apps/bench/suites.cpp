// The suite registry, helpers shared by the suites, and the attention and matmul suites
// (the ceilings live in bench_ceilings.cpp).

#include "apps/bench/bench_suites.hpp"

#include "apps/bench/bench_attention.hpp"
#include "host/util/half.hpp"
#include "host/ops/matmul.hpp"
#include "host/ops/ops.hpp"
#include "host/util/random.hpp"
#include "runtime/error.hpp"

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

const char* timing_name(const Context& ctx) { return ctx.limits().timestamps ? "gpu_timestamps" : "host_wall_clock"; }

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

namespace {

std::string mib_text(std::uint64_t bytes) {
    return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB";
}

} // namespace

void check_memory(const Context& ctx, const SuiteSettings& s, std::uint64_t total_bytes, std::uint64_t largest_buffer) {
    const std::uint64_t budget = memory_budget(ctx, s);
    if (total_bytes > budget) {
        throw Skip{"needs " + mib_text(total_bytes) + " of device memory, over the budget of " + mib_text(budget) +
                   (s.max_memory != 0 ? " (--max-memory)" : " (half the device-local heap; --max-memory)")};
    }
    const std::uint64_t allocation = ctx.device_info().max_memory_allocation_size;
    if (allocation != 0 && largest_buffer > allocation) {
        throw Skip{"a " + mib_text(largest_buffer) + " buffer exceeds maxMemoryAllocationSize (" + mib_text(allocation) +
                   ")"};
    }
}

Buffer random_buffer(Context& ctx, std::uint64_t bytes, bool f16, std::uint64_t seed, const char* name) {
    constexpr std::size_t kBlockValues = std::size_t{1} << 16;
    const std::vector<float> values = random_uniform(kBlockValues, seed);
    std::vector<std::byte> block;
    if (f16) {
        const std::vector<std::uint16_t> halves = floats_to_halves(values);
        const auto b = std::as_bytes(std::span<const std::uint16_t>(halves));
        block.assign(b.begin(), b.end());
    } else {
        const auto b = std::as_bytes(std::span<const float>(values));
        block.assign(b.begin(), b.end());
    }
    Buffer buffer = ctx.create_buffer(bytes, MemoryKind::Device, name);
    // Uploaded in 16 MiB pieces of the repeated block: bounded host memory for any size.
    std::vector<std::byte> piece;
    const std::uint64_t piece_bytes = std::min<std::uint64_t>(bytes, 16ull << 20);
    piece.reserve(piece_bytes);
    while (piece.size() < piece_bytes) {
        const std::size_t n = std::min<std::size_t>(block.size(), piece_bytes - piece.size());
        piece.insert(piece.end(), block.begin(), block.begin() + static_cast<std::ptrdiff_t>(n));
    }
    for (std::uint64_t done = 0; done < bytes; done += piece_bytes) {
        const std::uint64_t n = std::min(piece_bytes, bytes - done);
        ctx.upload(buffer, std::span<const std::byte>(piece.data(), n), done);
    }
    return buffer;
}

// --- attention ---------------------------------------------------------------------------

namespace {

std::vector<AttentionPreset> presets_named(const std::vector<std::string>& names) {
    std::vector<AttentionPreset> out;
    for (const AttentionPreset& p : attention_presets()) {
        if (std::find(names.begin(), names.end(), p.name) != names.end()) {
            out.push_back(p);
        }
    }
    return out;
}

} // namespace

std::vector<BenchCase> attention_cases(const Context&, const SuiteSettings& s) {
    std::vector<BenchCase> cases;
    for (const AttentionPreset& preset : presets_named(s.presets)) {
        struct Shape {
            bool decode;
            std::uint32_t q_len, kv_len;
        };
        std::vector<Shape> shapes;
        for (const std::uint32_t n : s.lengths) {
            shapes.push_back({false, n, n});
        }
        for (const std::uint32_t n : s.decode_kv) {
            shapes.push_back({true, 1, n});
        }
        for (const Shape& shape : shapes) {
            for (const DType dtype : {DType::F32, DType::F16}) {
                for (const bool naive : {false, true}) {
                    // The naive baseline is timed for prefill only (decoding needs no n x n
                    // scores), and in --quick only where it stays cheap.
                    if (naive && (!s.naive || shape.decode)) {
                        continue;
                    }
                    const std::string mode = shape.decode ? "decode" : "prefill";
                    const std::string impl = naive ? "naive" : "tiled";
                    BenchCase c;
                    c.name = preset.name + " " + mode + " " + to_string(dtype) + " " + impl +
                             " q=" + std::to_string(shape.q_len) + " kv=" + std::to_string(shape.kv_len);
                    c.params = {{"model", preset.name},
                                {"mode", mode},
                                {"dtype", std::string(to_string(dtype))},
                                {"impl", impl},
                                {"batch", std::int64_t{1}},
                                {"n_head", std::int64_t{preset.n_head}},
                                {"head_dim", std::int64_t{preset.head_dim}},
                                {"q_len", std::int64_t{shape.q_len}},
                                {"kv_len", std::int64_t{shape.kv_len}}};
                    c.flops = attention_case_flops(preset, 1, shape.q_len, shape.kv_len);
                    c.bytes = attention_case_bytes(preset, dtype, 1, shape.q_len, shape.kv_len);
                    c.run = [preset, dtype, shape, naive](CaseEnv& env, Result& r) {
                        // Attention binds each of Q, K, V and O whole: over the range it cannot run.
                        const std::uint64_t row_bytes = std::uint64_t{preset.n_head} * preset.head_dim * element_size(dtype);
                        const std::uint64_t largest = row_bytes * std::max(shape.q_len, shape.kv_len);
                        const std::uint64_t range = env.ctx.limits().storage_buffer_range;
                        if (largest > range) {
                            throw Skip{"a " + std::to_string(largest) + "-byte Q/K/V tensor exceeds maxStorageBufferRange (" +
                                       std::to_string(range) + " bytes)"};
                        }
                        const AttentionTiming t = time_attention(env.ctx, preset, dtype, 1, shape.q_len, shape.kv_len,
                                                                 naive, env.settings.warmup, env.settings.reps);
                        if (t.impossible) {
                            throw Skip{"naive attention impossible: " + *t.impossible};
                        }
                        r.reps_ms = t.ms;
                        r.plan = naive ? "naive three-pass (n x n float32 scores)" : t.plan;
                        r.flops = t.flops;
                        r.bytes = t.io_bytes;
                        r.extra.emplace_back("memory_bytes", static_cast<double>(t.memory_bytes));
                    };
                    cases.push_back(std::move(c));
                }
            }
        }
    }
    return cases;
}

// --- matmul ------------------------------------------------------------------------------

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

} // namespace

std::vector<BenchCase> matmul_cases(const Context&, const SuiteSettings& s) {
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
                BenchCase c;
                c.name = preset.name + " " + layer.layer + " m=" + std::to_string(m) + " n=" + std::to_string(layer.n) +
                         " k=" + std::to_string(layer.k) + " " + to_string(wdtype);
                c.params = {{"model", preset.name},
                            {"layer", layer.layer},
                            {"weights", std::string(to_string(wdtype))},
                            {"m", std::int64_t{m}},
                            {"n", std::int64_t{layer.n}},
                            {"k", std::int64_t{layer.k}}};
                const std::uint64_t wbytes = std::uint64_t{layer.n} * layer.k * element_size(wdtype);
                c.flops = 2ull * m * layer.n * layer.k;
                c.bytes = std::uint64_t{m} * layer.k * 4 + wbytes + std::uint64_t{m} * layer.n * 4;
                c.run = [m, layer, wdtype, wbytes](CaseEnv& env, Result& r) {
                    Context& ctx = env.ctx;
                    const MatmulPlan plan = plan_matmul(matmul_device(ctx), m, layer.n, layer.k, wdtype);
                    const std::uint64_t x_bytes = std::uint64_t{m} * layer.k * 4;
                    const std::uint64_t y_bytes = std::uint64_t{m} * layer.n * 4;
                    const std::uint64_t scratch = matmul_scratch_bytes(ctx, m, layer.n, layer.k, wdtype);
                    check_memory(ctx, env.settings, x_bytes + wbytes + y_bytes + scratch,
                                 std::max({x_bytes, wbytes, y_bytes, scratch}));
                    const Buffer x = random_buffer(ctx, x_bytes, false, 0x5eed11, "bench X");
                    const Buffer w = random_buffer(ctx, wbytes, wdtype == DType::F16, 0x5eed12, "bench W");
                    const Buffer y = ctx.create_buffer(y_bytes, MemoryKind::Device, "bench Y");
                    std::optional<Buffer> scratch_buffer;
                    MatmulArgs args{.x = whole(x), .w = whole(w), .y = whole(y), .m = m, .n = layer.n, .k = layer.k,
                                    .weight_dtype = wdtype};
                    if (scratch != 0) {
                        scratch_buffer.emplace(ctx.create_buffer(scratch, MemoryKind::Device, "bench scratch"));
                        args.scratch = whole(*scratch_buffer);
                    }
                    const auto list = ctx.command_list(ctx.limits().timestamps);
                    record_matmul(ctx, *list, args);
                    r.reps_ms = time_list(ctx, *list, env.settings.warmup, env.settings.reps);
                    r.plan = plan.describe();
                    r.flops = 2ull * m * layer.n * layer.k;
                    r.bytes = x_bytes + wbytes + y_bytes;
                };
                cases.push_back(std::move(c));
            }
        }
    }
    return cases;
}

} // namespace vkf::bench
