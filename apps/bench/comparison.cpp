// `vkf-bench compare`'s table (comparison.hpp).

#include "apps/bench/comparison.hpp"

#include "apps/bench/suites.hpp"
#include "base/format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace vkf::bench {

const Result* find_result(const Run& run, const std::string& suite, const std::string& name) {
    for (const Result& r : run.results) {
        if (r.suite == suite && r.name == name) {
            return &r;
        }
    }
    return nullptr;
}

std::vector<std::pair<std::string, std::string>> all_cases(std::span<const Run> runs) {
    std::vector<std::pair<std::string, std::string>> keys;
    std::set<std::pair<std::string, std::string>> seen;
    for (const Run& run : runs) {
        for (const Result& r : run.results) {
            if (seen.insert({r.suite, r.name}).second) {
                keys.emplace_back(r.suite, r.name);
            }
        }
    }
    std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
        const auto rank = [](const std::string& suite) {
            const auto& reg = suite_registry();
            for (std::size_t i = 0; i < reg.size(); ++i) {
                if (reg[i].name == suite) {
                    return i;
                }
            }
            return reg.size();  // suites of newer vkf-bench versions go last
        };
        return rank(a.first) < rank(b.first);
    });
    return keys;
}

std::optional<double> speed_of(const Result& r) {
    if (r.status != Status::Ok || !r.stats) {
        return std::nullopt;
    }
    if (r.gflops) {
        return r.gflops;
    }
    if (r.gbps) {
        return r.gbps;
    }
    if (const auto d = r.extra_value("dispatches_per_s")) {
        return d;
    }
    return r.stats->median > 0.0 ? std::optional<double>(1000.0 / r.stats->median) : std::nullopt;
}

void print_comparison(std::ostream& out, std::span<const Run> runs, std::span<const std::string> labels) {
    out << "files:\n";
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const Run& run = runs[i];
        out << fmt::format("  [{}] {}: {} ({}, {} {}, Vulkan {}), limits forced: {}, vkformer {} {}{}, {}{}\n", i + 1,
                           labels[i], device_text(run, "name"), device_text(run, "vendor_name"),
                           device_text(run, "driver_name"), device_text(run, "driver_version_text"),
                           device_text(run, "api_version"), run.limit_overrides, run.vkformer_version,
                           run.git_commit.substr(0, 12), run.git_dirty ? "+changes" : "", run.created_utc,
                           run.quick ? ", quick" : "");
    }
    out << "\nceilings:\n";
    struct CeilingRow {
        const char* name;
        std::optional<double> Ceilings::*field;
        const char* unit;
    };
    const CeilingRow ceiling_rows[] = {
        {"memory bandwidth", &Ceilings::bandwidth_gbps, "GB/s"}, {"fp32 FMA", &Ceilings::fp32_gflops, "GFLOP/s"},
        {"fp16 FMA", &Ceilings::fp16_gflops, "GFLOP/s"},         {"dispatches", &Ceilings::dispatches_per_s, "per s"},
        {"host to device", &Ceilings::upload_gbps, "GB/s"},      {"device to host", &Ceilings::download_gbps, "GB/s"}};
    for (const CeilingRow& row : ceiling_rows) {
        out << fmt::format("  {:<24}", fmt::format("{} ({})", row.name, row.unit));
        const std::optional<double> base = runs[0].ceilings.*row.field;
        for (const Run& run : runs) {
            const std::optional<double> v = run.ceilings.*row.field;
            std::string cell = v ? significant(*v) : "-";
            if (v && base && *base > 0.0 && &run != &runs[0]) {
                cell += fmt::format(" ({}x)", fixed(*v / *base, 2));
            }
            out << fmt::format("  {:>20}", cell);
        }
        out << '\n';
    }

    const auto keys = all_cases(runs);
    std::size_t name_width = 4;
    for (const auto& [suite, name] : keys) {
        name_width = std::max(name_width, suite.size() + 2 + name.size());
    }
    out << fmt::format("\n{:<{}}", "case", name_width);
    for (std::size_t i = 0; i < runs.size(); ++i) {
        out << fmt::format("  {:>11}", fmt::format("[{}] ms", i + 1))
            << (i == 0 ? "" : fmt::format("  {:>7}", "speed"));
    }
    out << '\n';
    std::size_t plan_differs = 0;
    for (const auto& [suite, name] : keys) {
        out << fmt::format("{:<{}}", suite + ": " + name, name_width);
        const Result* base = find_result(runs[0], suite, name);
        // 0: no speed (GCC 12 misreads optionals copied out of a ternary as uninitialized).
        const double base_speed = base ? speed_of(*base).value_or(0.0) : 0.0;
        for (std::size_t i = 0; i < runs.size(); ++i) {
            const Result* r = find_result(runs[i], suite, name);
            std::string ms = "-";
            std::string ratio = "-";
            if (r && r->status != Status::Ok) {
                ms = to_string(r->status);
            } else if (r && r->stats) {
                ms = significant(r->stats->median);
                const std::optional<double> sp = speed_of(*r);
                if (sp && base_speed > 0.0) {
                    ratio = fixed(*sp / base_speed, 2) + "x";
                    if (base && base->status == Status::Ok && base->plan != r->plan) {
                        ratio += "*";
                        ++plan_differs;
                    }
                }
            }
            out << fmt::format("  {:>11}", ms) << (i == 0 ? "" : fmt::format("  {:>7}", ratio));
        }
        out << '\n';
    }
    out << "\nspeed: relative to [1] (higher is faster), from GFLOP/s, GB/s or dispatches/s of the same work.\n";
    if (plan_differs > 0) {
        out << "*: the device chose another tile plan than [1]'s (" << plan_differs
            << " results; the plans are in the result files).\n";
    }
}

}  // namespace vkf::bench
