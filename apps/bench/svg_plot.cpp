// `vkf-bench compare`'s plots (svg_plot.hpp).

#include "apps/bench/svg_plot.hpp"

#include "apps/bench/comparison.hpp"
#include "apps/common/svg_chart.hpp"
#include "base/error.hpp"
#include "base/files.hpp"
#include "base/format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

namespace vkf::bench {

namespace {

std::string param_text(const Param& p) {
    if (const auto* s = std::get_if<std::string>(&p.value)) {
        return *s;
    }
    return fmt::to_string(std::get<std::int64_t>(p.value));
}

}  // namespace

namespace {

// GFLOP/s (else GB/s) against the suite's x_param, one line per file and series.
std::string line_plot(const Suite& suite, std::span<const Run> runs, std::span<const std::string> labels) {
    bool any_flops = false;
    for (const Run& run : runs) {
        for (const Result& r : run.results) {
            any_flops |= r.suite == suite.name && r.gflops.has_value();
        }
    }
    const std::string y_title = any_flops ? "GFLOP/s" : "GB/s";
    app::LineChart chart{.title = "vkf-bench " + suite.name + ": " + y_title + " against " + suite.x_param,
                         .x_title = suite.x_param,
                         .y_title = y_title};
    for (std::size_t f = 0; f < runs.size(); ++f) {
        std::map<std::string, std::size_t> index;  // series key -> position in chart.series
        std::size_t colors = 0;
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
            auto [it, added] = index.emplace(key, chart.series.size());
            if (added) {
                // Colours tell a file's series apart, dash patterns the files.
                chart.series.push_back({.label = labels[f] + ": " + key, .color = colors++, .dash = f});
            }
            chart.series[it->second].points.emplace_back(static_cast<double>(std::get<std::int64_t>(x->value)), *y);
        }
    }
    for (app::ChartSeries& s : chart.series) {
        std::sort(s.points.begin(), s.points.end());
    }
    return app::svg_line_chart(chart);
}

// Speed relative to the first file, per case.
std::string bar_plot(const Suite& suite, std::span<const Run> runs, std::span<const std::string> labels) {
    constexpr double kWidth = 900, kPlotLeft = 80, kPlotRight = 880, kPlotTop = 50, kPlotBottom = 400, kLegendTop = 600;
    struct Series {
        std::string label;
        std::vector<std::pair<double, double>> points;  // (category, y)
    };
    std::vector<Series> series;
    std::vector<std::string> categories;
    const std::string y_title = "speed relative to " + labels[0];
    double y_max = 0;
    for (const auto& [s, name] : all_cases(runs)) {
        if (s == suite.name) {
            categories.push_back(name);
        }
    }
    for (std::size_t f = 0; f < runs.size(); ++f) {
        Series s{labels[f], {}};
        for (std::size_t c = 0; c < categories.size(); ++c) {
            const Result* base = find_result(runs[0], suite.name, categories[c]);
            const Result* r = find_result(runs[f], suite.name, categories[c]);
            const double b = base ? speed_of(*base).value_or(0.0) : 0.0;  // 0: none
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

    const double height = kLegendTop + 20.0 * static_cast<double>(series.size()) + 20;
    std::ostringstream svg;
    svg << R"(<?xml version="1.0" encoding="UTF-8"?>)" << '\n'
        << R"(<svg xmlns="http://www.w3.org/2000/svg" width=")" << kWidth << R"(" height=")" << height
        << R"(" viewBox="0 0 )" << kWidth << ' ' << height << R"(" font-family="sans-serif" font-size="12">)" << '\n'
        << R"(<rect width="100%" height="100%" fill="white"/>)" << '\n'
        << R"(<text x=")" << kWidth / 2 << R"(" y="24" text-anchor="middle" font-size="16">vkf-bench )"
        << app::xml_escape(suite.name) << ": " << app::xml_escape(y_title) << "</text>\n";
    if (series.empty()) {
        svg << R"(<text x=")" << kWidth / 2 << R"(" y="200" text-anchor="middle">no results to plot</text>)" << '\n'
            << "</svg>\n";
        return svg.str();
    }
    const double y_step = app::nice_step(y_max, 5);
    const double y_top = std::ceil(y_max / y_step) * y_step;
    const auto py = [&](double y) { return kPlotBottom - (kPlotBottom - kPlotTop) * y / y_top; };
    // Axes and horizontal grid with labels.
    for (double y = 0; y <= y_top + y_step * 0.5; y += y_step) {
        svg << R"(<line x1=")" << kPlotLeft << R"(" y1=")" << py(y) << R"(" x2=")" << kPlotRight << R"(" y2=")" << py(y)
            << R"(" stroke="#ddd"/>)" << '\n'
            << R"(<text x=")" << kPlotLeft - 6 << R"(" y=")" << py(y) + 4 << R"(" text-anchor="end">)"
            << fmt::format("{:.4g}", y) << "</text>\n";
    }
    svg << R"(<line x1=")" << kPlotLeft << R"(" y1=")" << kPlotBottom << R"(" x2=")" << kPlotRight << R"(" y2=")"
        << kPlotBottom << R"(" stroke="black"/>)" << '\n'
        << R"(<line x1=")" << kPlotLeft << R"(" y1=")" << kPlotTop << R"(" x2=")" << kPlotLeft << R"(" y2=")"
        << kPlotBottom << R"(" stroke="black"/>)" << '\n'
        << R"(<text transform="translate(18 )" << (kPlotTop + kPlotBottom) / 2
        << R"x() rotate(-90)" text-anchor="middle">)x" << app::xml_escape(y_title) << "</text>\n";

    const double group = (kPlotRight - kPlotLeft) / static_cast<double>(std::max<std::size_t>(categories.size(), 1));
    const double bar = group * 0.8 / static_cast<double>(series.size());
    svg << R"(<line x1=")" << kPlotLeft << R"(" y1=")" << py(1.0) << R"(" x2=")" << kPlotRight << R"(" y2=")" << py(1.0)
        << R"(" stroke="black" stroke-dasharray="4,3"/>)" << '\n';
    for (std::size_t c = 0; c < categories.size(); ++c) {
        const double cx = kPlotLeft + group * (static_cast<double>(c) + 0.5);
        svg << R"(<text transform="translate()" << cx << ' ' << kPlotBottom + 12
            << R"x() rotate(-40)" text-anchor="end" font-size="10">)x" << app::xml_escape(categories[c]) << "</text>\n";
    }
    for (std::size_t i = 0; i < series.size(); ++i) {
        const Series& s = series[i];
        const std::string_view color = app::chart_color(i);
        for (const auto& [c, y] : s.points) {
            const double x = kPlotLeft + group * (c + 0.1) + bar * static_cast<double>(i);
            svg << R"(<rect x=")" << x << R"(" y=")" << py(y) << R"(" width=")" << bar << R"(" height=")"
                << kPlotBottom - py(y) << R"(" fill=")" << color << R"("><title>)" << app::xml_escape(s.label) << ": "
                << fixed(y, 2) << "x</title></rect>\n";
        }
        const double ly = kLegendTop + 20.0 * static_cast<double>(i);
        svg << R"(<rect x=")" << kPlotLeft << R"(" y=")" << ly - 8 << R"(" width="20" height="12" fill=")" << color
            << R"("/>)" << '\n'
            << R"(<text x=")" << kPlotLeft + 28 << R"(" y=")" << ly + 3 << "\">" << app::xml_escape(s.label)
            << "</text>\n";
    }
    svg << "</svg>\n";
    return svg.str();
}

}  // namespace

std::string svg_plot(const Suite& suite, std::span<const Run> runs, std::span<const std::string> labels) {
    return suite.plot == PlotKind::Lines ? line_plot(suite, runs, labels) : bar_plot(suite, runs, labels);
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
        write_file_atomically(path, svg_plot(suite, runs, labels), "plot");
        written.push_back(path);
    }
    return written;
}

}  // namespace vkf::bench
