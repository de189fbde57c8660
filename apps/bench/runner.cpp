// `vkf-bench run` (bench_run.hpp).

#include "apps/bench/bench_run.hpp"

#include "apps/bench/bench_format.hpp"

#include "apps/common/cli.hpp"
#include "runtime/device_info_json.hpp"
#include "runtime/error.hpp"
#include "vkf_version.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <new>
#include <sstream>

namespace vkf::bench {

namespace {

constexpr const char* kUsage = R"(usage: vkf-bench run [options]      (or: vkf-bench [options])

Measures the device's ceilings (memory bandwidth, fp32/fp16 FMA rate, dispatch overhead,
host<->device transfers), then vkformer's kernels on the model presets, and places each
kernel result against the ceilings. Each result is the median of --reps GPU-timed
submissions after --warmup untimed ones, with min, max and quartiles. --out writes a
result file (JSON, see README "Benchmark result files") for `vkf-bench compare`.

suites (--suites, in this order):
  ceilings    memory bandwidth, fp32 and fp16 FMA, dispatch overhead, transfers
  attention   tiled ALiBi attention (and the naive baseline for prefill), f32 and f16
  matmul      the presets' linear layers at m = 1 and the prefill rows, f16 weights
  block       one transformer block: prefill of the prefill rows, one decoding step
  model       whole models (LM head included): prefill and decoding tokens/s

options:
  --suites LIST        comma-separated suites (default: all)
  --quick              a few minutes on lavapipe: bloom-560m only, attention prefill
                       64,128,256 and decode 256,1024, matmul and block m = 1 and 32,
                       whole model 8 tokens, warmup 1, reps 3, smaller ceilings;
                       options given explicitly still win
  --presets LIST       bloom-560m, mpt-7b (default both; --quick: bloom-560m)
  --lengths N,...      attention prefill lengths (default 512,1024,2048,4096,8192)
  --decode-kv N,...    attention KV lengths for decoding (default 512,2048,8192)
  --prefill-m N,...    rows of a prefill for matmul, block and model (default 512);
                       m = 1 always runs, and decoding steps run after m tokens
  --no-naive           leave out the naive attention baseline
  --max-memory SIZE    device memory one case may use (K/M/G suffixes; default half
                       the largest device-local heap); bigger cases are skipped
  --warmup N           untimed submissions per case (default 2)
  --reps N             timed submissions per case (default 7)
  --out FILE           write the result file here
  --json               print the result file's JSON on stdout instead of the table
  --progress MODE      auto (a bar when stderr is a terminal, else a line per case),
                       bar, lines or none (default auto)
  --timeout S          seconds one submission may take before the device counts as hung
  --device D           device index or name substring (default: VKF_DEVICE)
  --limits SPEC        lower device limits ("phone", or shared_memory=N, ..., see
                       vkf-info --help), merged over VKF_LIMITS
  -h, --help           show this help

A case the device cannot run (no float16 arithmetic, a buffer over a limit, more memory
than allowed) is recorded as skipped with the reason; a case that throws is recorded as
failed and the exit code is 1.
)";

// --- progress ------------------------------------------------------------------------

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace

Progress::Progress(ProgressMode mode, std::size_t total) : total_(total), started_(now_s()) {
    const bool tty = isatty(STDERR_FILENO) != 0;
    bar_ = mode == ProgressMode::Bar || (mode == ProgressMode::Auto && tty);
    lines_ = mode == ProgressMode::Lines || (mode == ProgressMode::Auto && !tty);
    if (bar_) {
        ticker_ = std::thread([this] { tick(); });
    }
}

Progress::~Progress() { done(); }

void Progress::tick() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
        wake_.wait_for(lock, std::chrono::seconds(1));
        if (!stop_ && !what_.empty()) {
            draw_locked();
        }
    }
}

std::string Progress::duration_text(double seconds) {
    const auto s = static_cast<long>(std::lround(std::max(0.0, seconds)));
    char text[32];
    if (s >= 3600) {
        std::snprintf(text, sizeof(text), "%ldh%02ldm", s / 3600, (s / 60) % 60);
    } else if (s >= 60) {
        std::snprintf(text, sizeof(text), "%ldm%02lds", s / 60, s % 60);
    } else {
        std::snprintf(text, sizeof(text), "%lds", s);
    }
    return text;
}

void Progress::begin(std::size_t i, const std::string& what, double remaining_estimate_s) {
    const std::lock_guard lock(mutex_);
    current_ = i;
    what_ = what;
    remaining_estimate_s_ = remaining_estimate_s;
    case_started_ = now_s();
    draw_locked();
}

void Progress::end(double estimate_s) {
    const std::lock_guard lock(mutex_);
    estimated_done_ += estimate_s;
    actual_done_ += now_s() - case_started_;
    what_.clear(); // nothing to redraw until the next case begins
}

void Progress::print_above(const std::function<void()>& print) {
    const std::lock_guard lock(mutex_);
    if (bar_) {
        std::cerr << "\r\033[K" << std::flush;
    }
    print();
    std::cout.flush();
    if (bar_ && !what_.empty()) {
        draw_locked();
    }
}

void Progress::draw_locked() {
    if (!bar_ && !lines_) {
        return;
    }
    const double t = now_s();
    // Estimates are rescaled by how long the finished cases took against theirs; the
    // current case's time so far counts as done.
    std::string left = "time left unknown";
    if (estimated_done_ > 0.0 && actual_done_ > 0.0) {
        const double scale = actual_done_ / estimated_done_;
        left = "about " + duration_text(std::max(0.0, remaining_estimate_s_ * scale - (t - case_started_))) + " left";
    }
    if (lines_) {
        std::cerr << "vkf-bench: [" << current_ + 1 << "/" << total_ << "] " << duration_text(t - started_)
                  << " elapsed, " << left << ": " << what_ << std::endl;
        return;
    }
    constexpr std::size_t kWidth = 24;
    const std::size_t filled = kWidth * current_ / std::max<std::size_t>(total_, 1);
    std::string line = "\r\033[K[" + std::string(filled, '#') + std::string(kWidth - filled, '.') + "] " +
                       std::to_string(current_ + 1) + "/" + std::to_string(total_) + " " +
                       duration_text(t - started_) + ", " + left + "  " + what_;
    if (line.size() > 120) { // one terminal line, or the carriage return cannot take it back
        line.resize(120);
    }
    std::cerr << line << std::flush;
}

void Progress::done() {
    {
        const std::lock_guard lock(mutex_);
        if (stop_) {
            return;
        }
        stop_ = true;
    }
    wake_.notify_all();
    if (ticker_.joinable()) {
        ticker_.join();
    }
    if (bar_) {
        std::cerr << "\r\033[K";
    }
    if (bar_ || lines_) {
        std::cerr << "vkf-bench: " << total_ << " case" << (total_ == 1 ? "" : "s") << " in "
                  << duration_text(now_s() - started_) << std::endl;
    }
}

namespace {

// --- options ---------------------------------------------------------------------------

struct RunOptions {
    std::vector<std::string> suites;
    SuiteSettings settings;
    ProgressMode progress = ProgressMode::Auto;
    bool json = false;
    std::optional<std::string> out;
    std::optional<std::string> device;
    LimitOverrides limits;
    std::optional<std::uint32_t> timeout_s;
    bool help = false;
};

std::uint64_t parse_size(std::string_view option, const std::string& text) {
    // LimitOverrides knows K/M/G suffixes: reuse its parser through a size key.
    try {
        const LimitOverrides o = LimitOverrides::parse("storage_buffer_range=" + text);
        return *o.storage_buffer_range;
    } catch (const Error&) {
        throw cli::UsageError{std::string(option) + " needs a size such as 512M or 2G, not '" + text + "'"};
    }
}

RunOptions parse_run_options(std::span<char* const> args) {
    RunOptions o;
    std::optional<std::vector<std::string>> presets;
    std::optional<std::vector<std::uint32_t>> lengths, decode_kv, prefill_m;
    std::optional<std::uint32_t> warmup, reps;
    bool quick = false, no_naive = false;
    std::optional<std::uint64_t> max_memory;
    cli::ArgReader a(args);
    std::vector<std::string_view> suite_names;
    for (const Suite& s : suite_registry()) {
        suite_names.push_back(s.name);
    }
    while (a.next()) {
        const std::string_view name = a.name();
        if (name == "--suites") {
            const std::string text = a.value();
            o.suites.clear();
            std::size_t start = 0;
            while (true) {
                const std::size_t comma = text.find(',', start);
                const std::string word = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
                if (!find_suite(word)) {
                    std::string known;
                    for (const std::string_view s : suite_names) {
                        known += (known.empty() ? "" : ", ") + std::string(s);
                    }
                    throw cli::UsageError{"--suites: unknown suite '" + word + "' (suites: " + known + ")"};
                }
                o.suites.push_back(word);
                if (comma == std::string::npos) {
                    break;
                }
                start = comma + 1;
            }
        } else if (name == "--quick") {
            a.flag();
            quick = true;
        } else if (name == "--presets") {
            presets = cli::parse_words(name, a.value(), {"bloom-560m", "mpt-7b"});
        } else if (name == "--lengths") {
            lengths = cli::parse_counts(name, a.value());
        } else if (name == "--decode-kv") {
            decode_kv = cli::parse_counts(name, a.value());
        } else if (name == "--prefill-m") {
            prefill_m = cli::parse_counts(name, a.value());
        } else if (name == "--no-naive") {
            a.flag();
            no_naive = true;
        } else if (name == "--max-memory") {
            max_memory = parse_size(name, a.value());
        } else if (name == "--warmup") {
            warmup = cli::parse_count(name, a.value(), 0);
        } else if (name == "--reps") {
            reps = cli::parse_count(name, a.value(), 1);
        } else if (name == "--out") {
            o.out = a.value();
        } else if (name == "--json") {
            a.flag();
            o.json = true;
        } else if (name == "--progress") {
            const std::string mode = cli::parse_choice(name, a.value(), {"auto", "bar", "lines", "none"});
            o.progress = mode == "bar"     ? ProgressMode::Bar
                         : mode == "lines" ? ProgressMode::Lines
                         : mode == "none"  ? ProgressMode::None
                                           : ProgressMode::Auto;
        } else if (name == "--timeout") {
            o.timeout_s = cli::parse_count(name, a.value(), 1);
        } else if (name == "--device") {
            o.device = a.value();
        } else if (name == "--limits") {
            o.limits = cli::parse_limits(name, a.value(), o.limits);
        } else if (name == "-h" || name == "--help") {
            a.flag();
            o.help = true;
        } else {
            a.unknown();
        }
    }
    if (o.suites.empty()) {
        for (const Suite& s : suite_registry()) {
            o.suites.push_back(s.name);
        }
    }
    SuiteSettings& s = o.settings;
    s.quick = quick;
    s.warmup = warmup.value_or(quick ? 1 : 2);
    s.reps = reps.value_or(quick ? 3 : 7);
    s.presets = presets.value_or(quick ? std::vector<std::string>{"bloom-560m"}
                                       : std::vector<std::string>{"bloom-560m", "mpt-7b"});
    s.lengths = lengths.value_or(quick ? std::vector<std::uint32_t>{64, 128, 256}
                                       : std::vector<std::uint32_t>{512, 1024, 2048, 4096, 8192});
    s.decode_kv = decode_kv.value_or(quick ? std::vector<std::uint32_t>{256, 1024}
                                           : std::vector<std::uint32_t>{512, 2048, 8192});
    s.prefill_m = prefill_m.value_or(quick ? std::vector<std::uint32_t>{32} : std::vector<std::uint32_t>{512});
    s.naive = !no_naive;
    s.max_memory = max_memory.value_or(0);
    return o;
}

// --- text output -----------------------------------------------------------------------

class TextTable {
public:
    explicit TextTable(std::size_t name_width) : name_width_(std::max<std::size_t>(name_width, 4)) {}
    void titles() const {
        std::cout << pad("suite", 9) << "  " << pad("case", name_width_) << "  " << pad("median ms", 10, true) << "  "
                  << pad("min..max ms", 21, true) << "  " << pad("GFLOP/s", 9, true) << "  " << pad("GB/s", 8, true)
                  << "  " << pad("%FMA", 6, true) << "  " << pad("%BW", 6, true) << "  plan / note" << std::endl;
    }
    void row(const Result& r) const {
        std::cout << pad(r.suite, 9) << "  " << pad(r.name, name_width_) << "  ";
        if (r.status != Status::Ok) {
            std::cout << pad(to_string(r.status), 10, true) << "  " << r.message << std::endl;
            return;
        }
        const auto opt = [](const std::optional<double>& v, int width) {
            return pad(v ? significant(*v) : "-", static_cast<std::size_t>(width), true);
        };
        const auto percent = [](const std::optional<double>& v) {
            return pad(v ? fixed(100.0 * *v, 1) : "-", 6, true);
        };
        std::string note = r.plan;
        if (const auto d = r.extra_value("dispatches_per_s")) {
            note = significant(*d) + " dispatches/s; " + note;
        }
        std::cout << pad(significant(r.stats->median), 10, true) << "  "
                  << pad(significant(r.stats->min) + ".." + significant(r.stats->max), 21, true) << "  "
                  << opt(r.gflops, 9) << "  " << opt(r.gbps, 8) << "  " << percent(r.fma_fraction) << "  "
                  << percent(r.bandwidth_fraction) << "  " << note << std::endl;
    }

private:
    std::size_t name_width_;
};

std::string limits_text(const ComputeLimits& l) {
    std::string text = "shared memory " + std::to_string(l.shared_memory) + " B, " +
                       std::to_string(l.workgroup_invocations) + " invocations, storage buffer range " +
                       std::to_string(l.storage_buffer_range >> 20) + " MiB, subgroup " +
                       std::to_string(l.subgroup_size) + ", fp16 arithmetic " + (l.fp16_arithmetic ? "yes" : "no");
    if (l.max_loop_iterations != 0) {
        text += ", at most " + std::to_string(l.max_loop_iterations) + " loop iterations (driver quirk)";
    }
    return text;
}

// Expected seconds of a case from its work and the ceilings measured so far (guesses of
// 10 GFLOP/s and 10 GB/s before): only the progress estimate uses it.
double estimate_s(const BenchCase& c, const SuiteSettings& s, const Ceilings& ceil) {
    if (c.flops == 0 && c.bytes == 0) {
        return s.quick ? 0.5 : 2.0; // the ceilings calibrate themselves to a fixed time
    }
    const double flops_rate = ceil.fp32_gflops.value_or(10.0) * 1e9;
    const double bw = ceil.bandwidth_gbps.value_or(10.0) * 1e9;
    const double per_rep = std::max(static_cast<double>(c.flops) / flops_rate, static_cast<double>(c.bytes) / bw);
    return per_rep * (s.warmup + s.reps) + static_cast<double>(c.bytes) / ceil.upload_gbps.value_or(1.0) * 1e-9 + 0.02;
}

void finish_result(Result& r, const Ceilings& ceilings) {
    if (r.status != Status::Ok || r.reps_ms.empty()) {
        return;
    }
    r.stats = stats_of(r.reps_ms);
    const double seconds = r.stats->median * 1e-3;
    if (seconds > 0.0) {
        if (r.flops != 0) {
            r.gflops = static_cast<double>(r.flops) / seconds * 1e-9;
        }
        if (r.bytes != 0) {
            r.gbps = static_cast<double>(r.bytes) / seconds * 1e-9;
        }
    }
    place_against(r, ceilings);
}

} // namespace

int run_command(std::span<char* const> args, const std::string& command_line) {
    const RunOptions o = parse_run_options(args);
    if (o.help) {
        std::cout << kUsage;
        return 0;
    }
    ContextOptions context_options{.device = o.device, .limits = o.limits};
    if (o.timeout_s) {
        context_options.timeout = std::chrono::milliseconds(std::int64_t{*o.timeout_s} * 1000);
    }
    Context ctx(context_options);

    Run run;
    run.vkformer_version = build::kVersion;
    run.git_commit = build::kGitCommit;
    run.git_dirty = build::kGitDirty;
    run.created_utc = utc_now_iso8601();
    run.command_line = command_line;
    run.suites = o.suites;
    run.quick = o.settings.quick;
    run.warmup = o.settings.warmup;
    run.reps = o.settings.reps;
    run.limit_overrides = ctx.overrides().describe();
    run.device = ctx.device_info();
    run.effective_limits = ctx.limits();
    run.quirks = ctx.quirks();

    struct Planned {
        const Suite* suite;
        BenchCase c;
    };
    std::vector<Planned> planned;
    std::size_t name_width = 0;
    for (const Suite& suite : suite_registry()) { // registry order: ceilings first
        if (std::find(o.suites.begin(), o.suites.end(), suite.name) == o.suites.end()) {
            continue;
        }
        for (BenchCase& c : suite.cases(ctx, o.settings)) {
            name_width = std::max(name_width, c.name.size());
            planned.push_back({&suite, std::move(c)});
        }
    }

    const DeviceInfo& info = ctx.device_info();
    const TextTable table(name_width);
    if (!o.json) {
        std::cout << "vkf-bench (vkformer " << run.vkformer_version << ", commit " << run.git_commit.substr(0, 12)
                  << (run.git_dirty ? "+changes" : "") << ")\n"
                  << "device:  " << info.name << " (" << to_string(info.type) << ", vendor " << info.vendor_name
                  << ")\n"
                  << "driver:  " << (info.driver_name.empty() ? "not reported" : info.driver_name)
                  << (info.driver_info.empty() ? "" : ", " + info.driver_info) << " (" << info.driver_version_text
                  << "), Vulkan " << format_version(info.api_version) << '\n'
                  << "limits:  " << limits_text(ctx.limits()) << '\n'
                  << "forced:  " << run.limit_overrides << '\n'
                  << "timing:  " << (ctx.limits().timestamps ? "GPU timestamps" : "host wall clock")
                  << ", median of " << run.reps << " after " << run.warmup << " warmup; " << planned.size()
                  << " cases\n\n";
        table.titles();
    }

    CaseEnv env{ctx, o.settings, run.ceilings};
    Progress progress(o.progress, planned.size());
    std::optional<std::string> device_lost;
    for (std::size_t i = 0; i < planned.size(); ++i) {
        const BenchCase& c = planned[i].c;
        double remaining = 0.0;
        for (std::size_t j = i; j < planned.size(); ++j) {
            remaining += estimate_s(planned[j].c, o.settings, run.ceilings);
        }
        const double estimate = estimate_s(c, o.settings, run.ceilings);
        progress.begin(i, planned[i].suite->name + ": " + c.name, remaining);
        Result r{.suite = planned[i].suite->name, .name = c.name, .params = c.params, .timing = timing_name(ctx)};
        if (device_lost) {
            r.status = Status::Failed;
            r.message = "not run: the device was lost in " + *device_lost;
        } else {
            try {
                c.run(env, r);
            } catch (const Skip& s) {
                r.status = Status::Skipped;
                r.message = s.reason;
            } catch (const DeviceLostError& e) {
                r.status = Status::Failed;
                r.message = e.what();
                device_lost = c.name;
            } catch (const Error& e) {
                r.status = Status::Failed;
                r.message = e.what();
            } catch (const std::bad_alloc&) {
                r.status = Status::Failed;
                r.message = "out of host memory";
            }
        }
        if (r.status != Status::Ok) {
            r.reps_ms.clear();
        }
        progress.end(estimate);
        finish_result(r, run.ceilings);
        run.results.push_back(std::move(r));
        if (!o.json) {
            progress.print_above([&] { table.row(run.results.back()); });
        }
    }
    progress.done();
    // Ceilings measured after a result (none in registry order) would change its fractions.
    for (Result& r : run.results) {
        place_against(r, run.ceilings);
    }

    if (o.out) {
        write_run_file(*o.out, run);
        std::cerr << "vkf-bench: wrote " << *o.out << '\n';
    }
    if (o.json) {
        std::cout << json_text(run_json(run)) << '\n';
    } else {
        const auto count = [&](Status s) {
            return std::count_if(run.results.begin(), run.results.end(), [&](const Result& r) { return r.status == s; });
        };
        std::cout << "\n" << count(Status::Ok) << " ok, " << count(Status::Skipped) << " skipped, "
                  << count(Status::Failed) << " failed. %FMA: GFLOP/s of the measured fp32 FMA rate; %BW: GB/s "
                                              "(least traffic) of the measured copy bandwidth.\n";
        if (!o.out) {
            std::cout << "(--out FILE writes a result file for vkf-bench compare)\n";
        }
    }

    int status = 0;
    const auto failed = std::count_if(run.results.begin(), run.results.end(),
                                      [](const Result& r) { return r.status == Status::Failed; });
    if (failed > 0) {
        std::cout.flush();
        std::cerr << "vkf-bench: " << failed << " of " << run.results.size() << " case(s) failed\n";
        status = 1;
    }
    if (ctx.validation_enabled() && ctx.validation_message_count() > 0) {
        std::cout.flush();
        std::cerr << "vkf-bench: " << ctx.validation_message_count() << " Vulkan validation message(s)\n";
        status = 1;
    }
    return status;
}

} // namespace vkf::bench
