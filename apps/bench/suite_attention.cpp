// `vkf-bench attention` (bench_attention.hpp). Each case gets its own tensors and ops;
// each op is recorded once and its command list submitted repeatedly, so the times are
// the kernels' alone, not recording, pipeline creation or uploads.

#include "apps/bench/bench_attention.hpp"

#include "apps/bench/bench_format.hpp"
#include "apps/bench/bench_results.hpp"
#include "apps/bench/bench_suites.hpp"

#include "host/spec/alibi.hpp"
#include "host/ops/attention.hpp"
#include "host/ops/attention_naive.hpp"
#include "host/spec/attention_params.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"
#include "runtime/context.hpp"
#include "runtime/device_info_json.hpp"
#include "runtime/error.hpp"
#include "vkf_version.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>


namespace vkf::bench {

namespace {

constexpr const char* kUsage = R"(usage: vkf-bench attention [options]

Times the tiled (flash) ALiBi attention kernel against the naive three-pass baseline
(scores, softmax, P.V through an n x n float32 buffer) on one device. Every case runs
on seeded random Q, K, V; each op is recorded once and submitted --warmup times, then
--reps times, and the median GPU time (timestamp queries) of those is reported.

Without --preset: batch 1, 16 heads, head_dim 64 and 128, causal mask with causal
ALiBi (max bias 8); prefill at 512, 2048 and 8192 tokens and decoding one token
against a 4096-key cache, in f32 and f16.

options:
  --preset NAME        bloom-560m (16 heads, head_dim 64, ALiBi max bias 8),
                       mpt-7b (32 heads, head_dim 128, MPT's slope table, max bias 8),
                       or all (both); replaces --heads and --head-dim
  --lengths N,...      prefill lengths, q_len = kv_len (default 512,2048,8192)
  --dtype f32|f16|both storage type of Q, K, V, O (default both)
  --mode prefill|decode|both
                       prefill, or one query row against a KV cache (default both)
  --decode-kv N,...    KV cache lengths for decoding (default 4096)
  --batch N            batch size (default 1)
  --heads N            query heads, as many KV heads (default 16)
  --head-dim D,...     head sizes (default 64,128)
  --warmup N           untimed submissions per op (default 2)
  --reps N             timed submissions per op (default 5)
  --no-naive           time the tiled kernel only
  --json               print one JSON document instead of the table
  --quick              CI smoke: lengths 256 and 1024 (decoding at 1024), warmup 1,
                       reps 3, and each shape in one dtype, the dtypes taking turns;
                       options given explicitly still win
  --timeout S          seconds one submission may take before the device counts
                       as hung (default VKF_TIMEOUT_MS, else 120)
  --device D           device index or name substring (default: VKF_DEVICE)
  --limits SPEC        lower device limits: "phone", or comma-separated
                       shared_memory=N, workgroup_invocations=N, workgroup_count=N,
                       storage_buffer_range=N, push_constants=N, no_fp16_storage, ...
  -h, --help           show this help

A case that throws is reported as failed and the sweep goes on; the exit code is 1
when any case failed. The naive op is "impossible" where its scores buffer exceeds
maxStorageBufferRange (128 MiB on lavapipe and many phones).

environment:
  VKF_DEVICE, VKF_LIMITS  as --device and --limits
  VKF_TIMEOUT_MS          as --timeout, in milliseconds
  VKF_VALIDATION          1 enables the Khronos validation layer; any message fails
)";

// --- settings --------------------------------------------------------------------------

enum class Mode { Prefill, Decode };

const char* to_string(Mode mode) { return mode == Mode::Prefill ? "prefill" : "decode"; }

// The attention heads being benchmarked and how their ALiBi slopes are made.
struct Model {
    std::string name;
    std::uint32_t n_head = 0;
    std::vector<std::uint32_t> head_dims;
    float max_bias = 8.0f;
    std::vector<float> slopes; // an explicit table (MPT); empty: the paper's formula
};

Model bloom_560m() { return Model{.name = "bloom-560m", .n_head = 16, .head_dims = {64}, .max_bias = 8.0f}; }

Model mpt_7b() {
    // MPT's alibi_bias_max is 8; for 32 heads its table equals the formula, but loading
    // it as a table is what a real MPT model does, so that is the path measured.
    return Model{.name = "mpt-7b",
                 .n_head = 32,
                 .head_dims = {128},
                 .max_bias = 8.0f,
                 .slopes = mpt_alibi_slopes(32, 8.0)};
}

// The command line as given; unset values take --quick's or the defaults in settings_of.
struct Options {
    std::optional<std::string> preset;
    std::optional<std::vector<std::uint32_t>> lengths;
    std::optional<std::vector<DType>> dtypes;
    std::optional<std::vector<Mode>> modes;
    std::optional<std::vector<std::uint32_t>> decode_kv;
    std::uint32_t batch = 1;
    std::optional<std::uint32_t> heads;
    std::optional<std::vector<std::uint32_t>> head_dims;
    std::optional<std::uint32_t> warmup;
    std::optional<std::uint32_t> reps;
    std::optional<double> timeout_s;
    std::optional<std::string> device;
    LimitOverrides limits;
    bool naive = true;
    bool json = false;
    bool quick = false;
    bool help = false;
};

struct Settings {
    std::vector<Model> models;
    std::vector<std::uint32_t> lengths;
    std::vector<DType> dtypes;
    std::vector<Mode> modes;
    std::vector<std::uint32_t> decode_kv;
    std::uint32_t batch = 1;
    std::uint32_t warmup = 2;
    std::uint32_t reps = 5;
    bool naive = true;
    bool quick = false;
    // --quick: each shape runs in one dtype, taking turns, so both are still covered.
    bool alternate_dtypes = false;
};

Settings settings_of(const Options& o) {
    Settings s{.batch = o.batch, .naive = o.naive, .quick = o.quick, .alternate_dtypes = o.quick};
    if (!o.preset) {
        s.models.push_back(Model{.name = "generic",
                                 .n_head = o.heads.value_or(16),
                                 .head_dims = o.head_dims.value_or(std::vector<std::uint32_t>{64, 128})});
    } else {
        if (*o.preset == "bloom-560m" || *o.preset == "all") {
            s.models.push_back(bloom_560m());
        }
        if (*o.preset == "mpt-7b" || *o.preset == "all") {
            s.models.push_back(mpt_7b());
        }
    }
    s.lengths = o.lengths.value_or(o.quick ? std::vector<std::uint32_t>{256, 1024}
                                           : std::vector<std::uint32_t>{512, 2048, 8192});
    s.decode_kv = o.decode_kv.value_or(std::vector<std::uint32_t>{o.quick ? 1024u : 4096u});
    s.dtypes = o.dtypes.value_or(std::vector<DType>{DType::F32, DType::F16});
    s.modes = o.modes.value_or(std::vector<Mode>{Mode::Prefill, Mode::Decode});
    s.warmup = o.warmup.value_or(o.quick ? 1 : 2);
    s.reps = o.reps.value_or(o.quick ? 3 : 5);
    return s;
}

// --- command line ----------------------------------------------------------------------

Options parse_options(std::span<char* const> args) {
    Options options;
    cli::ArgReader a(args);
    while (a.next()) {
        const std::string_view name = a.name();
        if (name == "--preset") {
            options.preset = cli::parse_choice(name, a.value(), {"bloom-560m", "mpt-7b", "all"});
        } else if (name == "--lengths") {
            options.lengths = cli::parse_counts(name, a.value());
        } else if (name == "--dtype") {
            const std::string dtype = cli::parse_choice(name, a.value(), {"f32", "f16", "both"});
            options.dtypes = dtype == "f32"   ? std::vector<DType>{DType::F32}
                             : dtype == "f16" ? std::vector<DType>{DType::F16}
                                              : std::vector<DType>{DType::F32, DType::F16};
        } else if (name == "--mode") {
            const std::string mode = cli::parse_choice(name, a.value(), {"prefill", "decode", "both"});
            options.modes = mode == "prefill"  ? std::vector<Mode>{Mode::Prefill}
                            : mode == "decode" ? std::vector<Mode>{Mode::Decode}
                                               : std::vector<Mode>{Mode::Prefill, Mode::Decode};
        } else if (name == "--decode-kv") {
            options.decode_kv = cli::parse_counts(name, a.value());
        } else if (name == "--batch") {
            options.batch = cli::parse_count(name, a.value(), 1);
        } else if (name == "--heads") {
            options.heads = cli::parse_count(name, a.value(), 1);
        } else if (name == "--head-dim") {
            options.head_dims = cli::parse_counts(name, a.value());
            for (const std::uint32_t d : *options.head_dims) {
                try {
                    check_head_dim(d);
                } catch (const Error& e) {
                    throw UsageError{std::string("--head-dim: ") + e.what()};
                }
            }
        } else if (name == "--warmup") {
            options.warmup = cli::parse_count(name, a.value(), 0);
        } else if (name == "--reps") {
            options.reps = cli::parse_count(name, a.value(), 1);
        } else if (name == "--timeout") {
            // Whole seconds are plenty: the limit is there to catch a hung device.
            options.timeout_s = cli::parse_count(name, a.value(), 1);
        } else if (name == "--device") {
            options.device = a.value();
        } else if (name == "--limits") {
            options.limits = cli::parse_limits(name, a.value(), options.limits);
        } else if (name == "--no-naive") {
            a.flag();
            options.naive = false;
        } else if (name == "--json") {
            a.flag();
            options.json = true;
        } else if (name == "--quick") {
            a.flag();
            options.quick = true;
        } else if (name == "-h" || name == "--help") {
            a.flag();
            options.help = true;
        } else {
            a.unknown();
        }
    }
    if (options.preset && (options.heads || options.head_dims)) {
        throw UsageError{"--preset sets the heads and head sizes; leave out --heads and --head-dim"};
    }
    return options;
}

// --- cases -----------------------------------------------------------------------------

struct Case {
    const Model* model = nullptr;
    Mode mode = Mode::Prefill;
    DType dtype = DType::F32;
    AttentionShape shape{};
};

// Unmasked (query, key) pairs: the work a kernel that skips masked tiles has to do. Under
// the causal mask query row i sits at position kv_len - q_len + i and sees keys 0..pos.
std::uint64_t unmasked_pairs(const AttentionShape& s) {
    std::uint64_t pairs = 0;
    for (std::uint32_t i = 0; i < s.q_len; ++i) {
        const std::int64_t position = std::int64_t{s.kv_len} - s.q_len + i;
        pairs += static_cast<std::uint64_t>(std::clamp<std::int64_t>(position + 1, 0, s.kv_len));
    }
    return pairs;
}

// Q.K^T and P.V: a multiply and an add each, per head_dim element of every unmasked pair.
std::uint64_t attention_flops(const AttentionShape& s) {
    return 4ull * s.batch * s.n_head * s.head_dim * unmasked_pairs(s);
}

// Q, K, V read once and O written once: the least traffic any attention kernel has.
std::uint64_t tensor_bytes(const AttentionShape& s, DType dtype) {
    return (2 * q_element_count(s) + 2 * kv_element_count(s)) * element_size(dtype);
}

// Within each model the cheap cases run first, so a slow device has reported most of
// the table before it reaches the long prefills (lavapipe needs hours for 8192 tokens).
std::vector<Case> make_cases(const Settings& s) {
    std::vector<Case> cases;
    for (const Model& model : s.models) {
        std::vector<std::pair<Mode, AttentionShape>> shapes;
        for (const Mode mode : s.modes) {
            for (const std::uint32_t d : model.head_dims) {
                for (const std::uint32_t length : mode == Mode::Prefill ? s.lengths : s.decode_kv) {
                    shapes.emplace_back(mode, AttentionShape{.batch = s.batch,
                                                             .q_len = mode == Mode::Prefill ? length : 1,
                                                             .kv_len = length,
                                                             .n_head = model.n_head,
                                                             .n_kv_head = model.n_head,
                                                             .head_dim = d});
                }
            }
        }
        std::stable_sort(shapes.begin(), shapes.end(), [](const auto& a, const auto& b) {
            return attention_flops(a.second) < attention_flops(b.second);
        });
        for (std::size_t i = 0; i < shapes.size(); ++i) {
            const auto& [mode, shape] = shapes[i];
            if (s.alternate_dtypes) {
                cases.push_back(
                    Case{.model = &model, .mode = mode, .dtype = s.dtypes[i % s.dtypes.size()], .shape = shape});
            } else {
                for (const DType dtype : s.dtypes) {
                    cases.push_back(Case{.model = &model, .mode = mode, .dtype = dtype, .shape = shape});
                }
            }
        }
    }
    return cases;
}

// Causal mask and causal ALiBi: the decoder attention both presets use.
AttentionParams params_of(const Case& c) {
    return AttentionParams{.shape = c.shape,
                           .mask = MaskMode::Causal,
                           .alibi = AlibiMode::Causal,
                           .max_bias = c.model->max_bias,
                           .slopes = c.model->slopes};
}

std::string case_text(const Case& c) {
    const AttentionShape& s = c.shape;
    return std::string(to_string(c.mode)) + " " + to_string(c.dtype) + " " + c.model->name + " b=" +
           std::to_string(s.batch) + " heads=" + std::to_string(s.n_head) + " d=" + std::to_string(s.head_dim) +
           " q=" + std::to_string(s.q_len) + " kv=" + std::to_string(s.kv_len);
}

// --- running ---------------------------------------------------------------------------

struct CaseResult {
    Case c;
    std::optional<std::string> error; // the case failed with this message
    std::vector<double> tiled_ms;     // one per timed submission
    std::vector<double> naive_ms;     // empty when the naive op did not run
    std::optional<std::string> naive_impossible;
    AttentionPlan plan;
    std::uint64_t tiled_scratch_bytes = 0;
    std::optional<std::uint64_t> naive_scores_bytes;
    double seconds = 0.0; // wall time of the whole case, uploads included
};

// Each tensor its own seed, the same in every case: runs stay comparable.
Buffer random_tensor(Context& ctx, std::size_t elements, DType dtype, std::uint64_t seed, const char* name) {
    const std::vector<float> values = random_uniform(elements, seed);
    Buffer buffer = ctx.create_buffer(elements * element_size(dtype), MemoryKind::Device, name);
    if (dtype == DType::F16) {
        const std::vector<std::uint16_t> halves = floats_to_halves(values);
        ctx.upload(buffer, std::span<const std::uint16_t>(halves));
    } else {
        ctx.upload(buffer, std::span<const float>(values));
    }
    return buffer;
}

void run_case(Context& ctx, const Settings& s, CaseResult& r) {
    const AttentionParams params = params_of(r.c);
    const AttentionShape& shape = r.c.shape;
    const DType dtype = r.c.dtype;

    // The ops first: a shape the device cannot run fails before any upload.
    const Attention tiled(ctx, params, dtype);
    r.plan = tiled.plan();
    r.tiled_scratch_bytes = tiled.scratch_bytes();
    std::optional<NaiveAttention> naive;
    if (s.naive) {
        r.naive_impossible = naive_attention_impossible(ctx.limits(), params);
        if (!r.naive_impossible) {
            naive.emplace(ctx, params, dtype);
            r.naive_scores_bytes = naive->scores_bytes();
        }
    }

    const Buffer q = random_tensor(ctx, q_element_count(shape), dtype, 0x5eed01, "bench Q");
    const Buffer k = random_tensor(ctx, kv_element_count(shape), dtype, 0x5eed02, "bench K");
    const Buffer v = random_tensor(ctx, kv_element_count(shape), dtype, 0x5eed03, "bench V");
    const Buffer o = ctx.create_buffer(q_element_count(shape) * element_size(dtype), MemoryKind::Device, "bench O");

    const bool timestamps = ctx.limits().timestamps;
    const auto tiled_list = ctx.command_list(timestamps);
    tiled.record(*tiled_list, whole(q), whole(k), whole(v), whole(o));
    r.tiled_ms = time_list(ctx, *tiled_list, s.warmup, s.reps);
    if (naive) {
        const auto naive_list = ctx.command_list(timestamps);
        naive->record(*naive_list, whole(q), whole(k), whole(v), whole(o));
        r.naive_ms = time_list(ctx, *naive_list, s.warmup, s.reps);
    }
}

// Runs every case, handing each result to `report` as soon as it is known.
std::vector<CaseResult> run_cases(Context& ctx, const Settings& s, const std::vector<Case>& cases,
                                  const std::function<void(std::size_t, const CaseResult&)>& report) {
    std::vector<CaseResult> results;
    results.reserve(cases.size()); // `r` below must stay put while its case runs
    const auto start = std::chrono::steady_clock::now();
    auto seconds_since = [](std::chrono::steady_clock::time_point t) {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    };
    std::optional<std::size_t> device_lost_in;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        CaseResult& r = results.emplace_back(CaseResult{.c = cases[i]});
        char elapsed[32];
        std::snprintf(elapsed, sizeof(elapsed), "%.1f", seconds_since(start));
        std::cerr << "vkf-bench: case " << i + 1 << "/" << cases.size() << " (" << elapsed
                  << " s elapsed): " << case_text(cases[i]) << std::endl;
        if (device_lost_in) {
            // A lost device stays lost: every later submission would fail the same way.
            r.error = "not run: the device was lost in case " + std::to_string(*device_lost_in + 1);
            report(i, r);
            continue;
        }
        const auto case_start = std::chrono::steady_clock::now();
        try {
            run_case(ctx, s, r);
        } catch (const DeviceLostError& e) {
            r.error = e.what();
            device_lost_in = i;
        } catch (const Error& e) {
            r.error = e.what();
        } catch (const std::bad_alloc&) {
            r.error = "out of host memory for the case's tensors";
        }
        r.seconds = seconds_since(case_start);
        report(i, r);
    }
    char total[32];
    std::snprintf(total, sizeof(total), "%.1f", seconds_since(start));
    std::cerr << "vkf-bench: " << cases.size() << " case" << (cases.size() == 1 ? "" : "s") << " in " << total
              << " s\n";
    return results;
}

// --- derived numbers -------------------------------------------------------------------

struct Metrics {
    std::optional<double> tiled_ms;
    std::optional<double> naive_ms;
    std::optional<double> speedup; // naive time / tiled time
    std::optional<double> tflops;
    std::optional<double> gbps;
    std::uint64_t flops = 0;
    std::uint64_t io_bytes = 0;                      // Q, K, V and O in the storage dtype
    std::uint64_t tiled_memory_bytes = 0;            // Q, K, V, O and the tiled op's scratch
    std::optional<std::uint64_t> naive_memory_bytes; // Q, K, V, O and the scores buffer
    std::uint64_t memory_bytes = 0;                  // all of the case's device buffers
};

Metrics metrics_of(const CaseResult& r) {
    Metrics m;
    m.flops = attention_flops(r.c.shape);
    m.io_bytes = tensor_bytes(r.c.shape, r.c.dtype);
    m.tiled_memory_bytes = m.io_bytes + r.tiled_scratch_bytes;
    m.memory_bytes = m.tiled_memory_bytes;
    if (r.naive_scores_bytes) {
        m.naive_memory_bytes = m.io_bytes + *r.naive_scores_bytes;
        m.memory_bytes += *r.naive_scores_bytes;
    }
    if (!r.tiled_ms.empty()) {
        m.tiled_ms = stats_of(r.tiled_ms).median;
        const double seconds = *m.tiled_ms * 1e-3;
        if (seconds > 0.0) {
            m.tflops = static_cast<double>(m.flops) / seconds * 1e-12;
            m.gbps = static_cast<double>(m.io_bytes) / seconds * 1e-9;
        }
    }
    if (!r.naive_ms.empty()) {
        m.naive_ms = stats_of(r.naive_ms).median;
        if (m.tiled_ms && *m.tiled_ms > 0.0) {
            m.speedup = *m.naive_ms / *m.tiled_ms;
        }
    }
    return m;
}

// --- text output -----------------------------------------------------------------------

std::string mib(std::uint64_t bytes) { return fixed(static_cast<double>(bytes) / (1024.0 * 1024.0), 1); }

// "32 KiB", "128 MiB": limits are powers of two more often than not.
std::string size_text(std::uint64_t bytes) {
    static constexpr const char* units[] = {"bytes", "KiB", "MiB", "GiB"};
    int unit = 0;
    std::uint64_t scale = 1;
    while (unit + 1 < 4 && bytes >= scale * 1024 && bytes % (scale * 1024) == 0) {
        scale *= 1024;
        ++unit;
    }
    return std::to_string(bytes / scale) + " " + units[unit];
}

std::string digits_of(std::uint64_t n) { return std::to_string(n); }

// A table printed a row at a time as cases finish, so its column widths are fixed up
// front: from the case list where the cell is known, generous guesses for measurements.
// A longer cell only shifts the rest of its own row.
class StreamingTable {
public:
    enum class Align { Left, Right };
    struct Column {
        std::string title;
        Align align;
        std::size_t width = 0; // at least the title's
    };
    explicit StreamingTable(std::vector<Column> columns) : columns_(std::move(columns)) {
        for (Column& c : columns_) {
            c.width = std::max(c.width, c.title.size());
        }
    }
    void print_titles(std::ostream& out) const {
        std::vector<std::string> titles;
        for (const Column& c : columns_) {
            titles.push_back(c.title);
        }
        print_row(out, titles);
    }
    void print_row(std::ostream& out, const std::vector<std::string>& row) const {
        std::string line;
        for (std::size_t i = 0; i < row.size(); ++i) {
            const std::size_t width = columns_[i].width;
            const std::string padding(width > row[i].size() ? width - row[i].size() : 0, ' ');
            line += i == 0 ? "" : "  ";
            if (columns_[i].align == Align::Right) {
                line += padding + row[i];
            } else {
                line += row[i] + (i + 1 == row.size() ? "" : padding);
            }
        }
        out << line << std::endl; // flushed: the next row may be many minutes away
    }

private:
    std::vector<Column> columns_;
};

std::string timing_text(const Context& ctx, const Settings& s) {
    return std::string(ctx.limits().timestamps ? "GPU timestamps" : "host wall clock (no GPU timestamps)") +
           ", median of " + std::to_string(s.reps) + (s.reps == 1 ? " submission" : " submissions") + " after " +
           std::to_string(s.warmup) + " warmup";
}

// The device and the limits that shape tile choices, then the table's titles; a row per
// case as it finishes; then the notes the rows refer to.
class TextReport {
public:
    TextReport(const Context& ctx, const Settings& s, const std::vector<Case>& cases)
        : table_(columns_for(cases)) {
        print_header(ctx, s);
        table_.print_titles(std::cout);
    }

    void add(std::size_t index, const CaseResult& r) {
        const AttentionShape& s = r.c.shape;
        const Metrics m = metrics_of(r);
        const std::string number = std::to_string(index + 1);
        std::vector<std::string> row = {number,
                                        r.c.model->name,
                                        to_string(r.c.mode),
                                        to_string(r.c.dtype),
                                        std::to_string(s.batch),
                                        std::to_string(s.n_head),
                                        std::to_string(s.head_dim),
                                        std::to_string(s.q_len),
                                        std::to_string(s.kv_len)};
        if (r.error) {
            row.insert(row.end(), {"failed", "-", "-", "-", "-", "-", "-", "see notes"});
            notes_.push_back("[" + number + "] failed: " + *r.error);
        } else {
            std::string naive_ms = "-";
            if (m.naive_ms) {
                naive_ms = fixed(*m.naive_ms, 3);
            } else if (r.naive_impossible) {
                naive_ms = "impossible";
                notes_.push_back("[" + number + "] naive impossible: " + *r.naive_impossible);
            }
            row.insert(row.end(),
                       {fixed(m.tiled_ms.value_or(0.0), 3), naive_ms, m.speedup ? fixed(*m.speedup, 2) + "x" : "-",
                        m.tflops ? significant(*m.tflops) : "-", m.gbps ? significant(*m.gbps) : "-",
                        mib(m.tiled_memory_bytes), m.naive_memory_bytes ? mib(*m.naive_memory_bytes) : "-",
                        r.plan.describe()});
        }
        table_.print_row(std::cout, row);
    }

    void finish() const {
        if (!notes_.empty()) {
            std::cout << "\nnotes:\n";
            for (const std::string& note : notes_) {
                std::cout << "  " << note << '\n';
            }
        }
        std::cout << "\nspeedup: naive ms / tiled ms. TFLOP/s: 4 * batch * heads * d per unmasked (query, key)\n"
                     "pair. GB/s: Q, K, V read and O written once. MiB: Q, K, V, O and the op's scratch\n"
                     "(naive MiB: Q, K, V, O and its float32 scores).\n";
    }

private:
    static std::vector<StreamingTable::Column> columns_for(const std::vector<Case>& cases) {
        std::size_t model = 0, batch = 0, heads = 0, d = 0, q = 0, kv = 0;
        for (const Case& c : cases) {
            model = std::max(model, c.model->name.size());
            batch = std::max(batch, digits_of(c.shape.batch).size());
            heads = std::max(heads, digits_of(c.shape.n_head).size());
            d = std::max(d, digits_of(c.shape.head_dim).size());
            q = std::max(q, digits_of(c.shape.q_len).size());
            kv = std::max(kv, digits_of(c.shape.kv_len).size());
        }
        using A = StreamingTable::Align;
        return {{"#", A::Right, digits_of(cases.size()).size()},
                {"model", A::Left, model},
                {"mode", A::Left, 7},
                {"dtype", A::Left},
                {"b", A::Right, batch},
                {"heads", A::Right, heads},
                {"d", A::Right, d},
                {"q", A::Right, q},
                {"kv", A::Right, kv},
                {"tiled ms", A::Right, 10},
                {"naive ms", A::Right, 10},
                {"speedup", A::Right, 7},
                {"TFLOP/s", A::Right, 9},
                {"GB/s", A::Right, 8},
                {"MiB", A::Right, 7},
                {"naive MiB", A::Right},
                {"plan", A::Left}};
    }

    static void print_header(const Context& ctx, const Settings& s) {
        const DeviceInfo& info = ctx.device_info();
        const ComputeLimits& l = ctx.limits();
        std::string limits = "shared memory " + size_text(l.shared_memory) + ", " +
                             std::to_string(l.workgroup_invocations) +
                             " invocations per workgroup, storage buffer range " + size_text(l.storage_buffer_range) +
                             ", subgroup size " + std::to_string(l.subgroup_size);
        if (l.max_loop_iterations != 0) {
            limits += ", at most " + std::to_string(l.max_loop_iterations) + " loop iterations (driver quirk)";
        }
        std::cout << "vkf-bench attention (vkformer " << build::kVersion << ")\n"
                  << "device:  " << info.name << " (" << vkf::to_string(info.type) << ", index " << info.index
                  << ")\n"
                  << "driver:  " << (info.driver_name.empty() ? "not reported" : info.driver_name)
                  << (info.driver_info.empty() ? "" : ", " + info.driver_info) << " (version "
                  << info.driver_version_text << ", driver id " << info.driver_id << ")\n"
                  << "API:     Vulkan " << format_version(info.api_version) << '\n'
                  << "limits:  " << limits << '\n'
                  << "forced:  " << ctx.overrides().describe() << '\n'
                  << "timing:  " << timing_text(ctx, s) << "\n\n";
    }

    StreamingTable table_;
    std::vector<std::string> notes_;
};

// --- JSON output -----------------------------------------------------------------------

using Json = nlohmann::ordered_json;

template <class T>
Json value_or_null(const std::optional<T>& v) {
    return v ? Json(*v) : Json(nullptr);
}

Json settings_json(const Context& ctx, const Settings& s) {
    Json models = Json::array();
    for (const Model& model : s.models) {
        models.push_back({{"name", model.name},
                          {"n_head", model.n_head},
                          {"head_dims", model.head_dims},
                          {"max_bias", static_cast<double>(model.max_bias)},
                          {"slopes", model.slopes.empty() ? "formula" : "table"}});
    }
    Json dtypes = Json::array();
    for (const DType dtype : s.dtypes) {
        dtypes.push_back(to_string(dtype));
    }
    Json modes = Json::array();
    for (const Mode mode : s.modes) {
        modes.push_back(to_string(mode));
    }
    return {{"models", models},
            {"lengths", s.lengths},
            {"decode_kv", s.decode_kv},
            {"dtypes", dtypes},
            {"modes", modes},
            {"batch", s.batch},
            {"warmup", s.warmup},
            {"reps", s.reps},
            {"naive", s.naive},
            {"quick", s.quick},
            {"mask", "causal"},
            {"alibi", "causal"},
            {"timing", ctx.limits().timestamps ? "gpu_timestamps" : "host_wall_clock"},
            {"limit_overrides", ctx.overrides().describe()}};
}

Json result_json(const CaseResult& r) {
    const AttentionShape& s = r.c.shape;
    const Metrics m = metrics_of(r);
    Json json = {{"model", r.c.model->name},
                 {"mode", to_string(r.c.mode)},
                 {"dtype", to_string(r.c.dtype)},
                 {"batch", s.batch},
                 {"n_head", s.n_head},
                 {"n_kv_head", s.n_kv_head},
                 {"head_dim", s.head_dim},
                 {"q_len", s.q_len},
                 {"kv_len", s.kv_len},
                 {"failed", r.error.has_value()},
                 {"error", value_or_null(r.error)},
                 {"tiled_ms_median", value_or_null(m.tiled_ms)},
                 {"tiled_ms_reps", r.tiled_ms},
                 {"naive_ms_median", value_or_null(m.naive_ms)},
                 {"naive_ms_reps", r.naive_ms},
                 {"naive_impossible", value_or_null(r.naive_impossible)},
                 {"speedup", value_or_null(m.speedup)},
                 {"tflops", value_or_null(m.tflops)},
                 {"gbps", value_or_null(m.gbps)},
                 {"flops", m.flops},
                 {"io_bytes", m.io_bytes},
                 {"memory_bytes", m.memory_bytes},
                 {"tiled_memory_bytes", m.tiled_memory_bytes},
                 {"naive_memory_bytes", value_or_null(m.naive_memory_bytes)},
                 {"plan", nullptr},
                 {"plan_text", nullptr}};
    if (r.plan.workgroup_size != 0) { // else the case failed before planning
        const AttentionPlan& p = r.plan;
        json["plan"] = {{"rows_per_group", p.rows_per_group},
                        {"keys_per_tile", p.keys_per_tile},
                        {"threads_per_row", p.threads_per_row},
                        {"workgroup_size", p.workgroup_size},
                        {"shared_bytes", p.shared_bytes},
                        {"n_splits", p.n_splits},
                        {"kv_split_len", p.kv_split_len}};
        json["plan_text"] = p.describe();
    }
    json["seconds"] = r.seconds;
    return json;
}

// One JSON document, printed when the sweep ends.
class JsonReport {
public:
    JsonReport(const Context& ctx, const Settings& s)
        : json_{{"vkformer_version", build::kVersion},
                {"device", ctx.device_info()},
                {"effective_limits", ctx.limits()},
                {"settings", settings_json(ctx, s)},
                {"results", Json::array()}} {}

    void add(const CaseResult& r) { json_["results"].push_back(result_json(r)); }

    void finish() { std::cout << json_text(json_) << '\n'; }

private:
    Json json_;
};

} // namespace

std::vector<AttentionPreset> attention_presets() {
    std::vector<AttentionPreset> presets;
    for (const Model& m : {bloom_560m(), mpt_7b()}) {
        presets.push_back(AttentionPreset{
            .name = m.name, .n_head = m.n_head, .head_dim = m.head_dims.at(0), .max_bias = m.max_bias, .slopes = m.slopes});
    }
    return presets;
}

namespace {

Model model_of(const AttentionPreset& p) {
    return Model{.name = p.name, .n_head = p.n_head, .head_dims = {p.head_dim}, .max_bias = p.max_bias, .slopes = p.slopes};
}

AttentionShape shape_of(const AttentionPreset& p, std::uint32_t batch, std::uint32_t q_len, std::uint32_t kv_len) {
    return AttentionShape{.batch = batch,
                          .q_len = q_len,
                          .kv_len = kv_len,
                          .n_head = p.n_head,
                          .n_kv_head = p.n_head,
                          .head_dim = p.head_dim};
}

} // namespace

std::uint64_t attention_case_flops(const AttentionPreset& preset, std::uint32_t batch, std::uint32_t q_len,
                                   std::uint32_t kv_len) {
    return attention_flops(shape_of(preset, batch, q_len, kv_len));
}

std::uint64_t attention_case_bytes(const AttentionPreset& preset, DType dtype, std::uint32_t batch,
                                   std::uint32_t q_len, std::uint32_t kv_len) {
    return tensor_bytes(shape_of(preset, batch, q_len, kv_len), dtype);
}

AttentionTiming time_attention(Context& ctx, const AttentionPreset& preset, DType dtype, std::uint32_t batch,
                               std::uint32_t q_len, std::uint32_t kv_len, bool naive, std::uint32_t warmup,
                               std::uint32_t reps) {
    const Model model = model_of(preset);
    const Case c{.model = &model,
                 .mode = q_len == kv_len ? Mode::Prefill : Mode::Decode,
                 .dtype = dtype,
                 .shape = shape_of(preset, batch, q_len, kv_len)};
    const AttentionParams params = params_of(c);
    const Settings s{.warmup = warmup, .reps = reps};
    AttentionTiming t{.flops = attention_flops(c.shape), .io_bytes = tensor_bytes(c.shape, dtype)};

    std::optional<Attention> tiled;
    std::optional<NaiveAttention> baseline;
    if (naive) {
        t.impossible = naive_attention_impossible(ctx.limits(), params);
        if (t.impossible) {
            return t;
        }
        baseline.emplace(ctx, params, dtype);
        t.memory_bytes = t.io_bytes + baseline->scores_bytes();
    } else {
        tiled.emplace(ctx, params, dtype);
        t.plan = tiled->plan().describe();
        t.memory_bytes = t.io_bytes + tiled->scratch_bytes();
    }
    const Buffer q = random_tensor(ctx, q_element_count(c.shape), dtype, 0x5eed01, "bench Q");
    const Buffer k = random_tensor(ctx, kv_element_count(c.shape), dtype, 0x5eed02, "bench K");
    const Buffer v = random_tensor(ctx, kv_element_count(c.shape), dtype, 0x5eed03, "bench V");
    const Buffer o = ctx.create_buffer(q_element_count(c.shape) * element_size(dtype), MemoryKind::Device, "bench O");
    const auto list = ctx.command_list(ctx.limits().timestamps);
    if (tiled) {
        tiled->record(*list, whole(q), whole(k), whole(v), whole(o));
    } else {
        baseline->record(*list, whole(q), whole(k), whole(v), whole(o));
    }
    t.ms = time_list(ctx, *list, s.warmup, s.reps);
    return t;
}

int run_attention(std::span<char* const> args) {
    const Options options = parse_options(args);
    if (options.help) {
        std::cout << kUsage;
        return 0;
    }
    const Settings settings = settings_of(options);
    const std::vector<Case> cases = make_cases(settings);

    ContextOptions context_options{.device = options.device, .limits = options.limits};
    if (options.timeout_s) {
        context_options.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(*options.timeout_s * 1000));
    }
    Context ctx(context_options);
    std::vector<CaseResult> results;
    if (options.json) {
        JsonReport report(ctx, settings);
        results = run_cases(ctx, settings, cases, [&](std::size_t, const CaseResult& r) { report.add(r); });
        report.finish();
    } else {
        TextReport report(ctx, settings, cases);
        results = run_cases(ctx, settings, cases, [&](std::size_t i, const CaseResult& r) { report.add(i, r); });
        report.finish();
    }

    int status = 0;
    const auto failed =
        std::count_if(results.begin(), results.end(), [](const CaseResult& r) { return r.error.has_value(); });
    if (failed > 0) {
        std::cout.flush();
        std::cerr << "vkf-bench attention: " << failed << " of " << results.size() << " case(s) failed\n";
        status = 1;
    }
    if (ctx.validation_enabled() && ctx.validation_message_count() > 0) {
        std::cout.flush();
        std::cerr << "vkf-bench attention: " << ctx.validation_message_count() << " Vulkan validation message(s)\n";
        status = 1;
    }
    return status;
}

} // namespace vkf::bench
