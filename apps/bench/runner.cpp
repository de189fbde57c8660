#include "apps/bench/runner.hpp"

#include "apps/bench/result_table.hpp"
#include "apps/common/exit_codes.hpp"
#include "base/error.hpp"
#include "runtime/device_info_json.hpp"
#include "vkf_version.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <new>
#include <optional>

namespace vkf::bench {

namespace {

// Expected seconds of a case from its work and the ceilings measured so far (guesses of
// 10 GFLOP/s and 10 GB/s before): only the progress estimate uses it.
double estimate_s(const BenchCase& c, const SuiteSettings& s, const Ceilings& ceil) {
    if (c.flops == 0 && c.bytes == 0) {
        return s.quick ? 0.5 : 2.0;  // the ceilings calibrate themselves to a fixed time
    }
    const double flops_rate = ceil.fp32_gflops.value_or(10.0) * 1e9;
    const double bw = ceil.bandwidth_gbps.value_or(10.0) * 1e9;
    const double per_rep = std::max(static_cast<double>(c.flops) / flops_rate, static_cast<double>(c.bytes) / bw);
    return per_rep * (s.warmup + s.reps) + static_cast<double>(c.bytes) / ceil.upload_gbps.value_or(1.0) * 1e-9 + 0.02;
}

// Statistics, rates and fractions of the ceilings from what the case filled in.
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

// Runs one case into r; what it throws becomes the result's status. Returns true when the
// device was lost.
bool run_one(const BenchCase& c, CaseEnv& env, Result& r) {
    try {
        c.run(env, r);
    } catch (const Skip& s) {
        r.status = Status::Skipped;
        r.message = s.reason;
    } catch (const DeviceLostError& e) {
        r.status = Status::Failed;
        r.message = e.what();
        return true;
    } catch (const Error& e) {
        r.status = Status::Failed;
        r.message = e.what();
    } catch (const std::bad_alloc&) {
        r.status = Status::Failed;
        r.message = "out of host memory";
    }
    return false;
}

struct PlannedCase {
    const Suite* suite = nullptr;
    BenchCase c;
};

std::vector<PlannedCase> plan_cases(const Context& ctx, const std::vector<std::string>& suites,
                                    const SuiteSettings& settings) {
    std::vector<PlannedCase> planned;
    for (const Suite& suite : suite_registry()) {
        if (std::find(suites.begin(), suites.end(), suite.name) == suites.end()) {
            continue;
        }
        for (BenchCase& c : suite.cases(ctx, settings)) {
            planned.push_back({&suite, std::move(c)});
        }
    }
    return planned;
}

// A Run with everything but the results.
Run start_run(const Context& ctx, const SuiteSettings& settings, const std::vector<std::string>& suites,
              const std::string& command_line) {
    Run run;
    run.vkformer_version = build::kVersion;
    run.git_commit = build::kGitCommit;
    run.git_dirty = build::kGitDirty;
    run.created_utc = utc_now_iso8601();
    run.command_line = command_line;
    run.suites = suites;
    run.quick = settings.quick;
    run.warmup = settings.warmup;
    run.reps = settings.reps;
    run.limit_overrides = ctx.overrides().describe();
    run.device = ctx.device_info();
    run.effective_limits = ctx.limits();
    run.quirks = ctx.quirks();
    return run;
}

// Runs `cases` into run.results and run.ceilings; `on_result` sees each result once its
// statistics and rates are known.
void run_cases(Context& ctx, const SuiteSettings& settings, const std::vector<PlannedCase>& cases,
               ProgressMode progress_mode, Run& run, const std::function<void(const Result&)>& on_result) {
    CaseEnv env{ctx, settings, run.ceilings, &run.results};
    Progress progress(progress_mode, cases.size());
    std::optional<std::string> device_lost_in;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const BenchCase& c = cases[i].c;
        double remaining = 0.0;
        for (std::size_t j = i; j < cases.size(); ++j) {
            remaining += estimate_s(cases[j].c, settings, run.ceilings);
        }
        const double estimate = estimate_s(c, settings, run.ceilings);
        progress.begin(i, cases[i].suite->name + ": " + c.name, remaining);
        Result r{.suite = cases[i].suite->name, .name = c.name, .params = c.params, .timing = timing_name(ctx)};
        if (device_lost_in) {
            // A lost device stays lost: every later submission would fail the same way.
            r.status = Status::Failed;
            r.message = "not run: the device was lost in " + *device_lost_in;
        } else if (run_one(c, env, r)) {
            device_lost_in = c.name;
        }
        if (r.status != Status::Ok) {
            r.reps_ms.clear();
        }
        progress.end(estimate);
        finish_result(r, run.ceilings);
        run.results.push_back(std::move(r));
        progress.print_above([&] { on_result(run.results.back()); });
    }
    progress.done();
    // Ceilings measured after a result (none in registry order) would change its fractions.
    for (Result& r : run.results) {
        place_against(r, run.ceilings);
    }
}

}  // namespace

Run run_suites(Context& ctx, const SuiteSettings& settings, const std::vector<std::string>& suites,
               const std::string& command_line, ProgressMode progress, bool print_table) {
    Run run = start_run(ctx, settings, suites, command_line);
    const std::vector<PlannedCase> cases = plan_cases(ctx, suites, settings);
    std::size_t name_width = 0;
    for (const PlannedCase& c : cases) {
        name_width = std::max(name_width, c.c.name.size());
    }
    const ResultTable table(name_width);
    if (print_table) {
        table.print_header(ctx, run, cases.size());
    }
    run_cases(ctx, settings, cases, progress, run, [&](const Result& r) {
        if (print_table) {
            table.print_row(r);
        }
    });
    return run;
}

int run_exit_status(const Context& ctx, const Run& run) {
    int status = app::kExitOk;
    const auto failed = std::count_if(run.results.begin(), run.results.end(),
                                      [](const Result& r) { return r.status == Status::Failed; });
    std::fflush(stdout);
    if (failed > 0) {
        fmt::print(stderr, "vkf-bench: {} of {} case(s) failed\n", failed, run.results.size());
        status = app::kExitFailure;
    }
    if (ctx.validation_enabled() && ctx.validation_message_count() > 0) {
        fmt::print(stderr, "vkf-bench: {} Vulkan validation message(s)\n", ctx.validation_message_count());
        status = app::kExitFailure;
    }
    return status;
}

}  // namespace vkf::bench
