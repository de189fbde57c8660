// `vkf-bench compare` (bench_report.hpp).

#include "apps/bench/bench_report.hpp"

#include "apps/bench/bench_format.hpp"

#include "apps/common/cli.hpp"
#include "runtime/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

namespace vkf::bench {

namespace {

constexpr const char* kUsage = R"(usage: vkf-bench compare A.json B.json ... [options]

Reads result files written by `vkf-bench run --out` (on any machine), prints every case
side by side with each file's median time and its speed relative to the first file
(higher is faster: GFLOP/s, GB/s or dispatches/s where known), and writes one SVG plot
per suite: attention GFLOP/s against sequence length (a line per file and series),
other suites as bars of speed relative to the first file.

options:
  --out-dir DIR     where the SVG files go (default: the current directory)
  --labels A,B,...  names for the files in the table and plots (default: file names)
  --no-plots        only the table
  -h, --help        show this help
)";

// Axis labels: 64, 0.05, 1.5e+04.
std::string tick_text(double v) {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.4g", v);
    return buffer;
}

const Result* find_result(const Run& run, const std::string& suite, const std::string& name) {
    for (const Result& r : run.results) {
        if (r.suite == suite && r.name == name) {
            return &r;
        }
    }
    return nullptr;
}

// (suite, name) of every result in any file: the first file's order, then new ones.
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
            return reg.size(); // suites of newer vkf-bench versions go last
        };
        return rank(a.first) < rank(b.first);
    });
    return keys;
}

std::string xml_escape(std::string_view text) {
    std::string out;
    for (const char c : text) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        default: out += c;
        }
    }
    return out;
}

std::string param_text(const Param& p) {
    if (const auto* s = std::get_if<std::string>(&p.value)) {
        return *s;
    }
    return std::to_string(std::get<std::int64_t>(p.value));
}

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
constexpr const char* kDashes[] = {"", "6,3", "2,3", "8,3,2,3"};

// A tick step of 1, 2 or 5 times a power of ten giving about `count` ticks up to top.
double nice_step(double top, int count) {
    const double raw = top / count;
    const double power = std::pow(10.0, std::floor(std::log10(raw)));
    for (const double m : {1.0, 2.0, 5.0, 10.0}) {
        if (m * power >= raw) {
            return m * power;
        }
    }
    return 10.0 * power;
}

} // namespace

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
        out << "  [" << i + 1 << "] " << labels[i] << ": " << device_text(run, "name") << " ("
            << device_text(run, "vendor_name") << ", " << device_text(run, "driver_name") << " "
            << device_text(run, "driver_version_text") << ", Vulkan " << device_text(run, "api_version")
            << "), limits forced: " << run.limit_overrides << ", vkformer " << run.vkformer_version << " "
            << run.git_commit.substr(0, 12) << (run.git_dirty ? "+changes" : "") << ", " << run.created_utc
            << (run.quick ? ", quick" : "") << "\n";
    }
    out << "\nceilings:\n";
    struct CeilingRow {
        const char* name;
        std::optional<double> Ceilings::*field;
        const char* unit;
    };
    const CeilingRow ceiling_rows[] = {{"memory bandwidth", &Ceilings::bandwidth_gbps, "GB/s"},
                                       {"fp32 FMA", &Ceilings::fp32_gflops, "GFLOP/s"},
                                       {"fp16 FMA", &Ceilings::fp16_gflops, "GFLOP/s"},
                                       {"dispatches", &Ceilings::dispatches_per_s, "per s"},
                                       {"host to device", &Ceilings::upload_gbps, "GB/s"},
                                       {"device to host", &Ceilings::download_gbps, "GB/s"}};
    for (const CeilingRow& row : ceiling_rows) {
        out << "  " << pad(std::string(row.name) + " (" + row.unit + ")", 24);
        const std::optional<double> base = runs[0].ceilings.*row.field;
        for (const Run& run : runs) {
            const std::optional<double> v = run.ceilings.*row.field;
            std::string cell = v ? significant(*v) : "-";
            if (v && base && *base > 0.0 && &run != &runs[0]) {
                cell += " (" + fixed(*v / *base, 2) + "x)";
            }
            out << "  " << pad(cell, 20, true);
        }
        out << '\n';
    }

    const auto keys = all_cases(runs);
    std::size_t name_width = 4;
    for (const auto& [suite, name] : keys) {
        name_width = std::max(name_width, suite.size() + 2 + name.size());
    }
    out << "\n" << pad("case", name_width);
    for (std::size_t i = 0; i < runs.size(); ++i) {
        out << "  " << pad("[" + std::to_string(i + 1) + "] ms", 11, true) << (i == 0 ? "" : "  " + pad("speed", 7, true));
    }
    out << '\n';
    std::size_t plan_differs = 0;
    for (const auto& [suite, name] : keys) {
        out << pad(suite + ": " + name, name_width);
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
            out << "  " << pad(ms, 11, true) << (i == 0 ? "" : "  " + pad(ratio, 7, true));
        }
        out << '\n';
    }
    out << "\nspeed: relative to [1] (higher is faster), from GFLOP/s, GB/s or dispatches/s of the same work.\n";
    if (plan_differs > 0) {
        out << "*: the device chose another tile plan than [1]'s (" << plan_differs
            << " results; the plans are in the result files).\n";
    }
}

std::string svg_plot(const Suite& suite, std::span<const Run> runs, std::span<const std::string> labels) {
    constexpr double kWidth = 900, kPlotLeft = 80, kPlotRight = 880, kPlotTop = 50, kPlotBottom = 400;
    struct Series {
        std::string label;
        std::size_t file;
        std::vector<std::pair<double, double>> points; // (x, y) or (category, y)
    };
    std::vector<Series> series;
    std::vector<std::string> categories;
    std::string y_title;
    double x_min = 0, x_max = 0, y_max = 0;

    if (suite.plot == PlotKind::Lines) {
        bool any_flops = false;
        for (const Run& run : runs) {
            for (const Result& r : run.results) {
                any_flops |= r.suite == suite.name && r.gflops.has_value();
            }
        }
        y_title = any_flops ? "GFLOP/s" : "GB/s";
        x_min = INFINITY;
        x_max = -INFINITY;
        for (std::size_t f = 0; f < runs.size(); ++f) {
            std::map<std::string, std::size_t> index; // series key -> position in `series`
            for (const Result& r : runs[f].results) {
                const Param* x = r.param(suite.x_param);
                const std::optional<double> y = any_flops ? r.gflops : r.gbps;
                if (r.suite != suite.name || r.status != Status::Ok || !x || !y ||
                    !std::holds_alternative<std::int64_t>(x->value)) {
                    continue;
                }
                std::string key;
                for (const std::string& p : suite.series_params) {
                    if (const Param* v = r.param(p)) {
                        key += (key.empty() ? "" : " ") + param_text(*v);
                    }
                }
                auto [it, added] = index.emplace(key, series.size());
                if (added) {
                    series.push_back(Series{labels[f] + ": " + key, f, {}});
                }
                const double xv = static_cast<double>(std::get<std::int64_t>(x->value));
                series[it->second].points.emplace_back(xv, *y);
                x_min = std::min(x_min, xv);
                x_max = std::max(x_max, xv);
                y_max = std::max(y_max, *y);
            }
        }
        for (Series& s : series) {
            std::sort(s.points.begin(), s.points.end());
        }
    } else {
        y_title = "speed relative to " + labels[0];
        for (const auto& [s, name] : all_cases(runs)) {
            if (s == suite.name) {
                categories.push_back(name);
            }
        }
        for (std::size_t f = 0; f < runs.size(); ++f) {
            Series s{labels[f], f, {}};
            for (std::size_t c = 0; c < categories.size(); ++c) {
                const Result* base = find_result(runs[0], suite.name, categories[c]);
                const Result* r = find_result(runs[f], suite.name, categories[c]);
                const double b = base ? speed_of(*base).value_or(0.0) : 0.0; // 0: none
                const double v = r ? speed_of(*r).value_or(0.0) : 0.0;
                if (b > 0.0 && v > 0.0) {
                    s.points.emplace_back(static_cast<double>(c), v / b);
                    y_max = std::max(y_max, v / b);
                }
            }
            if (!categories.empty()) {
                series.push_back(std::move(s));
            }
        }
        y_max = std::max(y_max, 1.0);
    }

    const double legend_top = suite.plot == PlotKind::Bars ? 600 : 440;
    const double height = legend_top + 20.0 * static_cast<double>(series.size()) + 20;
    std::ostringstream svg;
    svg << R"(<?xml version="1.0" encoding="UTF-8"?>)" << '\n'
        << R"(<svg xmlns="http://www.w3.org/2000/svg" width=")" << kWidth << R"(" height=")" << height
        << R"(" viewBox="0 0 )" << kWidth << ' ' << height << R"(" font-family="sans-serif" font-size="12">)" << '\n'
        << R"(<rect width="100%" height="100%" fill="white"/>)" << '\n'
        << R"(<text x=")" << kWidth / 2 << R"(" y="24" text-anchor="middle" font-size="16">vkf-bench )"
        << xml_escape(suite.name) << ": " << xml_escape(y_title)
        << (suite.plot == PlotKind::Lines ? " against " + xml_escape(suite.x_param) : std::string()) << "</text>\n";

    if (series.empty() || y_max <= 0.0) {
        svg << R"(<text x=")" << kWidth / 2 << R"(" y="200" text-anchor="middle">no results to plot</text>)" << '\n'
            << "</svg>\n";
        return svg.str();
    }
    const double y_step = nice_step(y_max, 5);
    const double y_top = std::ceil(y_max / y_step) * y_step;
    const auto py = [&](double y) { return kPlotBottom - (kPlotBottom - kPlotTop) * y / y_top; };
    // Axes and horizontal grid with labels.
    for (double y = 0; y <= y_top + y_step * 0.5; y += y_step) {
        svg << R"(<line x1=")" << kPlotLeft << R"(" y1=")" << py(y) << R"(" x2=")" << kPlotRight << R"(" y2=")"
            << py(y) << R"(" stroke="#ddd"/>)" << '\n'
            << R"(<text x=")" << kPlotLeft - 6 << R"(" y=")" << py(y) + 4 << R"(" text-anchor="end">)"
            << tick_text(y) << "</text>\n";
    }
    svg << R"(<line x1=")" << kPlotLeft << R"(" y1=")" << kPlotBottom << R"(" x2=")" << kPlotRight << R"(" y2=")"
        << kPlotBottom << R"(" stroke="black"/>)" << '\n'
        << R"(<line x1=")" << kPlotLeft << R"(" y1=")" << kPlotTop << R"(" x2=")" << kPlotLeft << R"(" y2=")"
        << kPlotBottom << R"(" stroke="black"/>)" << '\n'
        << R"(<text transform="translate(18 )" << (kPlotTop + kPlotBottom) / 2
        << R"x() rotate(-90)" text-anchor="middle">)x" << xml_escape(y_title) << "</text>\n";

    if (suite.plot == PlotKind::Lines) {
        const double lx0 = std::log2(x_min), lx1 = std::log2(x_max);
        const auto px = [&](double x) {
            return lx1 > lx0 ? kPlotLeft + 20 + (kPlotRight - kPlotLeft - 40) * (std::log2(x) - lx0) / (lx1 - lx0)
                             : (kPlotLeft + kPlotRight) / 2;
        };
        std::set<double> xs;
        for (const Series& s : series) {
            for (const auto& p : s.points) {
                xs.insert(p.first);
            }
        }
        for (const double x : xs) {
            svg << R"(<text x=")" << px(x) << R"(" y=")" << kPlotBottom + 18 << R"(" text-anchor="middle">)"
                << tick_text(x) << "</text>\n";
        }
        svg << R"(<text x=")" << (kPlotLeft + kPlotRight) / 2 << R"(" y=")" << kPlotBottom + 38
            << R"(" text-anchor="middle">)" << xml_escape(suite.x_param) << " (log scale)</text>\n";
        std::map<std::size_t, std::size_t> per_file;
        for (std::size_t i = 0; i < series.size(); ++i) {
            const Series& s = series[i];
            const char* color = kColors[per_file[s.file]++ % std::size(kColors)];
            const char* dash = kDashes[s.file % std::size(kDashes)];
            svg << R"(<polyline fill="none" stroke=")" << color << R"(" stroke-width="2")"
                << (*dash ? std::string(R"( stroke-dasharray=")") + dash + "\"" : std::string()) << R"( points=")";
            for (const auto& [x, y] : s.points) {
                svg << px(x) << ',' << py(y) << ' ';
            }
            svg << "\"/>\n";
            for (const auto& [x, y] : s.points) {
                svg << R"(<circle cx=")" << px(x) << R"(" cy=")" << py(y) << R"(" r="3" fill=")" << color << R"("/>)"
                    << '\n';
            }
            const double ly = legend_top + 20.0 * static_cast<double>(i);
            svg << R"(<line x1=")" << kPlotLeft << R"(" y1=")" << ly << R"(" x2=")" << kPlotLeft + 30 << R"(" y2=")"
                << ly << R"(" stroke=")" << color << R"(" stroke-width="2")"
                << (*dash ? std::string(R"( stroke-dasharray=")") + dash + "\"" : std::string()) << "/>\n"
                << R"(<text x=")" << kPlotLeft + 38 << R"(" y=")" << ly + 4 << "\">" << xml_escape(s.label)
                << "</text>\n";
        }
    } else {
        const double group = (kPlotRight - kPlotLeft) / static_cast<double>(std::max<std::size_t>(categories.size(), 1));
        const double bar = group * 0.8 / static_cast<double>(series.size());
        svg << R"(<line x1=")" << kPlotLeft << R"(" y1=")" << py(1.0) << R"(" x2=")" << kPlotRight << R"(" y2=")"
            << py(1.0) << R"(" stroke="black" stroke-dasharray="4,3"/>)" << '\n';
        for (std::size_t c = 0; c < categories.size(); ++c) {
            const double cx = kPlotLeft + group * (static_cast<double>(c) + 0.5);
            svg << R"(<text transform="translate()" << cx << ' ' << kPlotBottom + 12
                << R"x() rotate(-40)" text-anchor="end" font-size="10">)x" << xml_escape(categories[c]) << "</text>\n";
        }
        for (std::size_t i = 0; i < series.size(); ++i) {
            const Series& s = series[i];
            const char* color = kColors[i % std::size(kColors)];
            for (const auto& [c, y] : s.points) {
                const double x = kPlotLeft + group * (c + 0.1) + bar * static_cast<double>(i);
                svg << R"(<rect x=")" << x << R"(" y=")" << py(y) << R"(" width=")" << bar << R"(" height=")"
                    << kPlotBottom - py(y) << R"(" fill=")" << color << R"("><title>)" << xml_escape(s.label) << ": "
                    << fixed(y, 2) << "x</title></rect>\n";
            }
            const double ly = legend_top + 20.0 * static_cast<double>(i);
            svg << R"(<rect x=")" << kPlotLeft << R"(" y=")" << ly - 8 << R"(" width="20" height="12" fill=")" << color
                << R"("/>)" << '\n'
                << R"(<text x=")" << kPlotLeft + 28 << R"(" y=")" << ly + 3 << "\">" << xml_escape(s.label)
                << "</text>\n";
        }
    }
    svg << "</svg>\n";
    return svg.str();
}

std::vector<std::filesystem::path> write_plots(const std::filesystem::path& dir, std::span<const Run> runs,
                                               std::span<const std::string> labels) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
        throw Error("cannot create the plot directory '" + dir.string() + "': " + ec.message());
    }
    // The registry's suites, and any a newer vkf-bench wrote (plotted as bars).
    std::vector<Suite> suites = suite_registry();
    for (const Run& run : runs) {
        for (const Result& r : run.results) {
            if (std::none_of(suites.begin(), suites.end(), [&](const Suite& s) { return s.name == r.suite; })) {
                suites.push_back(Suite{.name = r.suite, .plot = PlotKind::Bars});
            }
        }
    }
    std::vector<std::filesystem::path> written;
    for (const Suite& suite : suites) {
        const bool present = std::any_of(runs.begin(), runs.end(), [&](const Run& run) {
            return std::any_of(run.results.begin(), run.results.end(),
                               [&](const Result& r) { return r.suite == suite.name; });
        });
        if (!present) {
            continue;
        }
        const std::filesystem::path path = dir / ("vkf-bench-" + suite.name + ".svg");
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << svg_plot(suite, runs, labels);
        if (!out) {
            throw Error("cannot write the plot '" + path.string() + "'");
        }
        written.push_back(path);
    }
    return written;
}

int compare_command(std::span<char* const> args) {
    std::vector<std::string> files;
    std::optional<std::vector<std::string>> labels;
    std::filesystem::path out_dir = ".";
    bool plots = true;
    cli::ArgReader a(args);
    while (a.next()) {
        const std::string_view name = a.name();
        if (name == "--out-dir") {
            out_dir = a.value();
        } else if (name == "--labels") {
            const std::string text = a.value();
            labels.emplace();
            std::size_t start = 0;
            while (true) {
                const std::size_t comma = text.find(',', start);
                labels->push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
                if (comma == std::string::npos) {
                    break;
                }
                start = comma + 1;
            }
        } else if (name == "--no-plots") {
            a.flag();
            plots = false;
        } else if (name == "-h" || name == "--help") {
            a.flag();
            std::cout << kUsage;
            return 0;
        } else if (name.starts_with("-") && name.size() > 1) {
            a.unknown();
        } else {
            files.emplace_back(a.arg());
        }
    }
    if (files.empty()) {
        throw cli::UsageError{"name at least one result file"};
    }
    if (labels && labels->size() != files.size()) {
        throw cli::UsageError{"--labels gives " + std::to_string(labels->size()) + " names for " +
                              std::to_string(files.size()) + " files"};
    }
    std::vector<Run> runs;
    for (const std::string& f : files) {
        runs.push_back(read_run_file(f));
    }
    if (!labels) {
        labels.emplace();
        for (const std::string& f : files) {
            labels->push_back(std::filesystem::path(f).stem().string());
        }
    }
    print_comparison(std::cout, runs, *labels);
    if (plots) {
        for (const auto& path : write_plots(out_dir, runs, *labels)) {
            std::cout << "plot: " << path.string() << '\n';
        }
    }
    return 0;
}

} // namespace vkf::bench
