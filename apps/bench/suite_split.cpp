// The split suite: what splitting a model by layers costs (issue 31). Per preset, a seeded
// random checkpoint of its shape is written once (fp16, host/spec/random_weights.hpp) and the
// real program runs it: vkf-run on one device (the baseline), with --devices over 2 and 3
// stages in this process (the run's device again: Contexts standing in for devices), and
// under `mpirun -n 1, 2, 3` (one stage per rank). Each case runs the program three times
// (once with --quick) and takes the median decoding time per token from its --json report;
// the report's "split" object gives the time spent moving activations between stages, given
// per token and as a share of the run. Programs, not command lists: the hand-offs happen on
// the host, and MPI's start-up and transport are part of what a user pays.

#include "apps/bench/model_work.hpp"
#include "apps/bench/suites.hpp"

#include "base/error.hpp"
#include "host/spec/random_weights.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>

namespace vkf::bench {

namespace {

namespace fs = std::filesystem;

// A random checkpoint in a temporary folder, written when a case first needs it and removed
// when the last case holding it goes.
class TempCheckpoint {
public:
    explicit TempCheckpoint(ModelConfig config) : config_(std::move(config)) {}
    TempCheckpoint(const TempCheckpoint&) = delete;
    TempCheckpoint& operator=(const TempCheckpoint&) = delete;
    ~TempCheckpoint() {
        if (!dir_.empty()) {
            std::error_code ignored;
            fs::remove_all(dir_, ignored);
        }
    }
    const fs::path& dir() {
        if (dir_.empty()) {
            const fs::path dir = fs::temp_directory_path() / fmt::format("vkf-bench-split-{}-{}", ::getpid(), ++count_);
            fs::remove_all(dir);
            write_random_checkpoint(dir, config_, 31, DType::F16);
            dir_ = dir;
        }
        return dir_;
    }

private:
    ModelConfig config_;
    fs::path dir_;
    static inline int count_ = 0;
};

std::string quoted(const std::string& s) {
    std::string out = "'";
    for (char c : s) {
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return out + "'";
}

// vkf-run beside vkf-bench (build/apps/bench/vkf-bench, build/apps/vkf-run; installed: the same
// folder), else the one on PATH.
std::string vkf_run_path() {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        for (const fs::path& candidate :
             {self.parent_path() / "vkf-run", self.parent_path().parent_path() / "vkf-run"}) {
            if (fs::exists(candidate)) {
                return candidate.string();
            }
        }
    }
    return "vkf-run";
}

bool on_path(const std::string& program) {
    return std::system(fmt::format("command -v {} >/dev/null 2>&1", program).c_str()) == 0;
}

// Runs a shell command line and returns its standard output (its standard error goes to
// `log`); throws vkf::Error with the log's end when it fails.
std::string run_program(const std::string& line, const fs::path& log) {
    const std::string full = line + " 2>" + quoted(log.string());
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(full.c_str(), "r"), ::pclose);
    if (!pipe) {
        throw Error("split suite: cannot start: " + line);
    }
    std::string out;
    std::array<char, 4096> buf{};
    while (const std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe.get())) {
        out.append(buf.data(), n);
    }
    const int status = ::pclose(pipe.release());
    if (status != 0) {
        std::string tail;
        if (FILE* f = std::fopen(log.c_str(), "r")) {
            std::array<char, 2048> t{};
            std::fseek(f, 0, SEEK_END);
            const long size = std::ftell(f);
            std::fseek(f, std::max(0L, size - static_cast<long>(t.size())), SEEK_SET);
            tail.assign(t.data(), std::fread(t.data(), 1, t.size(), f));
            std::fclose(f);
        }
        throw Error(fmt::format("split suite: `{}` failed (status {}): {}", line, status, tail));
    }
    return out;
}

enum class Mode { One, Devices, Ranks };

struct SplitCase {
    Mode mode;
    std::uint32_t stages;
};

}  // namespace

std::vector<BenchCase> split_cases(const Context& ctx, const SuiteSettings& s) {
    std::vector<BenchCase> cases;
    const std::uint32_t device = ctx.device_info().index;
    const std::uint32_t prompt = std::clamp<std::uint32_t>(s.prefill_m.empty() ? 32 : s.prefill_m.front(), 1, 128);
    const std::uint32_t n_predict = s.quick ? 8 : 32;
    const std::uint32_t runs = s.quick ? 1 : 3;
    for (const ModelPreset& preset : model_presets()) {
        if (std::find(s.presets.begin(), s.presets.end(), preset.name) == s.presets.end()) {
            continue;
        }
        auto checkpoint = std::make_shared<TempCheckpoint>(preset.config);
        const std::vector<SplitCase> splits = {{Mode::One, 1},   {Mode::Devices, 2}, {Mode::Devices, 3},
                                               {Mode::Ranks, 1}, {Mode::Ranks, 2},   {Mode::Ranks, 3}};
        for (const SplitCase& split : splits) {
            if (split.stages > preset.config.n_layer) {
                continue;
            }
            const char* mode = split.mode == Mode::One ? "one" : split.mode == Mode::Devices ? "devices" : "ranks";
            BenchCase c;
            c.name = fmt::format("{} decode {} {} prompt {}", preset.name, mode, split.stages, prompt);
            c.params = {{"model", preset.name},
                        {"mode", std::string(mode)},
                        {"stages", std::int64_t{split.stages}},
                        {"tokens", std::int64_t{prompt}}};
            c.flops = layers_flops(preset.config, prompt, 1);
            const ModelConfig config = preset.config;
            const std::variant<std::int64_t, std::string> c_model = preset.name;
            c.run = [=](CaseEnv& env, Result& r) {
                const std::string run = vkf_run_path();
                std::string launcher;
                if (split.mode == Mode::Ranks) {
                    if (!on_path("mpirun")) {
                        throw Skip{"mpirun is not installed (Debian: openmpi-bin)"};
                    }
                    // OpenMPI binds each rank to one core when there are at most two ranks: a
                    // CPU driver (lavapipe) then runs on one core at -n 1 and 2 and on all at -n 3
                    // (bloom-560m: 637 against 346 ms a token). Unbound, the ranks compare.
                    launcher = fmt::format("mpirun --oversubscribe --bind-to none {}-n {} ",
                                           ::getuid() == 0 ? "--allow-run-as-root " : "", split.stages);
                }
                std::string devices;
                if (split.mode == Mode::Devices) {
                    devices = fmt::format(" --devices {}", device);
                    for (std::uint32_t i = 1; i < split.stages; ++i) {
                        devices += fmt::format(",{}", device);
                    }
                } else {
                    devices = fmt::format(" --device {}", device);
                }
                std::string ids;
                for (std::uint32_t id : token_ids(prompt, config.vocab_size)) {
                    ids += (ids.empty() ? "" : ",") + fmt::to_string(id);
                }
                const fs::path log = fs::temp_directory_path() / fmt::format("vkf-bench-split-{}.log", ::getpid());
                const std::string line = fmt::format(
                    "{}{} --model {}{} --prompt-ids {} --n-predict {} --ignore-eos --ctx {} --json --quiet", launcher,
                    quoted(run), quoted(checkpoint->dir().string()), devices, ids, n_predict, prompt + n_predict + 1);
                std::vector<double> transfer_ms, share;
                for (std::uint32_t i = 0; i < runs; ++i) {
                    std::string text;
                    try {
                        text = run_program(line, log);
                    } catch (const Error& e) {
                        if (std::string_view(e.what()).find("built without MPI support") != std::string_view::npos) {
                            throw Skip{"vkf-run was built without MPI support"};
                        }
                        throw;
                    }
                    const nlohmann::json out = nlohmann::json::parse(text, nullptr, false);
                    if (out.is_discarded() || !out.is_object()) {
                        throw Error(fmt::format("split suite: `{}` did not print one JSON object{}", line,
                                                split.mode == Mode::Ranks ? " (several ranks each ran alone: vkf-run "
                                                                            "built without MPI?)"
                                                                          : ""));
                    }
                    const double decode_tps = out.at("decode_tokens_per_second").get<double>();
                    r.reps_ms.push_back(1000.0 / decode_tps);
                    if (out.contains("split")) {
                        const double ms = out["split"].at("transfer_ms").get<double>();
                        const double wall_ms =
                            1000.0 * (out.at("prefill_seconds").get<double>() + out.at("decode_seconds").get<double>());
                        transfer_ms.push_back(ms / (prompt + n_predict));
                        share.push_back(wall_ms > 0 ? ms / wall_ms : 0.0);
                    }
                }
                std::filesystem::remove(log);
                r.timing = "host_wall_clock";
                r.flops = layers_flops(config, prompt + n_predict / 2, 1);
                r.bytes = bytes_read_per_pass(config, WeightFormat{.dense = DType::F16}, true);
                if (!transfer_ms.empty()) {
                    r.extra.emplace_back("transfer_ms_per_token", stats_of(transfer_ms).median);
                    r.extra.emplace_back("transfer_share", stats_of(share).median);
                }
                // Against the one-device run of the same preset, measured earlier in this run.
                for (const Result& e : *env.earlier) {
                    const Param* m = e.param("model");
                    const Param* how = e.param("mode");
                    if (e.suite == "split" && e.status == Status::Ok && !e.reps_ms.empty() && m && how &&
                        m->value == c_model && how->value == std::variant<std::int64_t, std::string>{"one"}) {
                        std::vector<double> mine = r.reps_ms;
                        r.extra.emplace_back("ms_per_token_vs_one_device",
                                             stats_of(mine).median / stats_of(e.reps_ms).median);
                    }
                }
                r.plan = fmt::format("{} run(s) of `{}`", runs, line.substr(0, line.find(" --prompt-ids")));
            };
            cases.push_back(std::move(c));
        }
    }
    return cases;
}

}  // namespace vkf::bench
