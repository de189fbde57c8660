#pragma once
// The suites of vkf-bench and the registry that lists them. A suite turns the run's
// settings into cases; each case fills in a Result (times, work, plan) or declares itself
// skipped; the runner (runner.hpp) times nothing itself, it orders the cases, shows
// progress and places results against the measured ceilings.
//
// Adding a suite is one function returning its cases plus one entry in suite_registry()
// (suites.cpp): time a recorded command list with time_list(), fill Result::flops/bytes/plan,
// and throw Skip for what the device cannot run.

#include "apps/bench/results.hpp"
#include "apps/bench/suite_attention.hpp"
#include "host/ops/matmul.hpp"
#include "host/spec/model_config.hpp"
#include "runtime/context.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace vkf::bench {

// A KV cache's storage: a side not quantized in `dense`, K and V each maybe quantized.
struct KvStorage {
    DType dense = DType::F16;
    QuantFormat k = QuantFormat::None, v = QuantFormat::None;
    std::string name = "f16";  // in case names (app::KvCacheFlags::name)
};

struct SuiteSettings {
    bool quick = false;
    std::uint32_t warmup = 2;
    std::uint32_t reps = 7;
    std::vector<std::string> presets;            // model presets of matmul, block and model: bloom-560m, mpt-7b
    std::vector<std::uint32_t> prefill_m;        // matmul rows for prefill (decode is m = 1)
    std::vector<std::string> weights = {"f16"};  // block and model: f32, f16, q8_0, q4_0
    AttentionSweep attention;                    // what the attention suite times
    // matmul: the kernel every case forces (Auto: each plan's own), e.g. GEMV on lavapipe
    MatmulKernel matmul_kernel = MatmulKernel::Auto;
    std::uint64_t max_memory = 0;                // bytes one case may allocate; 0: from the device
    DType kv_dtype = DType::F16;                 // block and model: the sessions' KV cache (SessionOptions)
    QuantFormat kv_k_quant = QuantFormat::None;  // block and model (not startup): a quantized K/V cache
    QuantFormat kv_v_quant = QuantFormat::None;
    std::string kv_name = "f16";  // the cache's storage in case names (app::KvCacheFlags::name)
    // block and model: more storages timed beside the one above, each case right after its
    // twin in the same run (--kv-also), so that a comparison sees the same load.
    std::vector<KvStorage> kv_also;
    std::vector<std::uint32_t> batch = {1};  // model: sequences decoding together (suite_model_batch.cpp)
    std::uint32_t window = 0;                // block and model: the sessions' key window (0: full)
    bool prefill = true, decode = true;      // block and model: which steps they time (--modes)
    // matmul: the opt-in cooperative-matrix kernel forced on the f16 prefill cases, instead of
    // the plans' kernels (--matmul-coopmat; skipped where the device lacks it).
    bool matmul_coopmat = false;
};

// Thrown by a case the device cannot run (a missing feature, a size over a limit): the
// result is recorded as skipped with this reason, not as failed.
struct Skip {
    std::string reason;
};

struct CaseEnv {
    Context& ctx;
    const SuiteSettings& settings;
    Ceilings& ceilings;  // measured so far; the ceilings suite fills it in
    // The run's results so far: a naive attention case relates its time to its tiled twin's.
    const std::vector<Result>* earlier = nullptr;
};

struct BenchCase {
    std::string name;  // unique within the suite and the same on every device
    std::vector<Param> params;
    std::uint64_t flops = 0;  // estimates for ordering and the progress bar's time left
    std::uint64_t bytes = 0;
    // Fills r (reps_ms, flops, bytes, plan, timing, extra); rates and statistics are
    // derived by the runner. Throws Skip, or vkf::Error for a failure.
    std::function<void(CaseEnv&, Result& r)> run;
};

enum class PlotKind { Lines, Bars };

struct Suite {
    std::string name;
    std::string description;
    std::function<std::vector<BenchCase>(const Context&, const SuiteSettings&)> cases;
    // How vkf-bench compare plots it: GFLOP/s (GB/s where a result has no flops) against
    // the x_param (lines, log scale) or per result name (bars); one line per file and
    // combination of series_params.
    PlotKind plot = PlotKind::Bars;
    std::string x_param;
    std::vector<std::string> series_params;
    // Run when --suites is not given (split is not: it writes checkpoints and starts programs).
    bool by_default = true;
};

// Every suite, in the order a run goes through them ("ceilings" first: the others are
// placed against it).
const std::vector<Suite>& suite_registry();
const Suite* find_suite(std::string_view name);

// --- helpers for suites ---

// Submits `list` warmup times untimed, then reps times; milliseconds of each: GPU
// timestamps summed over the list's ops where the device has them, else host wall clock.
std::vector<double> time_list(Context& ctx, CommandList& list, std::uint32_t warmup, std::uint32_t reps);
const char* timing_name(const Context& ctx);
// The bytes one case may allocate: SuiteSettings::max_memory, else half the largest
// device-local heap, and never more than maxMemoryAllocationSize per buffer.
std::uint64_t memory_budget(const Context& ctx, const SuiteSettings& s);
// Throws Skip when a case needs more than the budget or a buffer over the allocation limit.
void check_memory(const Context& ctx, const SuiteSettings& s, std::uint64_t total_bytes, std::uint64_t largest_buffer);
// A device buffer of `bytes` filled with seeded random fp32 or fp16 values (a 64 Ki-value
// random block repeated: cheap for the 500 MB LM head, never zeros or constants).
Buffer random_buffer(Context& ctx, std::uint64_t bytes, bool f16, std::uint64_t seed, const char* name);

// The model presets of the matmul, block, model and startup suites (suite_model.cpp).
struct ModelPreset {
    std::string name;
    ModelConfig config;
};
std::vector<ModelPreset> model_presets();

// The suites (each in its own file).
std::vector<BenchCase> ceiling_cases(const Context& ctx, const SuiteSettings& s);    // suite_ceilings.cpp
std::vector<BenchCase> attention_cases(const Context& ctx, const SuiteSettings& s);  // suite_attention.cpp
std::vector<BenchCase> matmul_cases(const Context& ctx, const SuiteSettings& s);     // suite_matmul.cpp
std::vector<BenchCase> block_cases(const Context& ctx, const SuiteSettings& s);      // suite_model.cpp
std::vector<BenchCase> model_cases(const Context& ctx, const SuiteSettings& s);      // suite_model.cpp
std::vector<BenchCase> batch_decode_cases(const SuiteSettings& s);                   // suite_model_batch.cpp
std::vector<BenchCase> prefix_cases(const Context& ctx, const SuiteSettings& s);     // suite_prefix.cpp
std::vector<BenchCase> startup_cases(const Context& ctx, const SuiteSettings& s);    // suite_startup.cpp
std::vector<BenchCase> split_cases(const Context& ctx, const SuiteSettings& s);      // suite_split.cpp

}  // namespace vkf::bench
