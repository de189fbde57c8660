#include "apps/common/svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <sstream>

namespace vkf::app {

namespace {

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
constexpr const char* kDashes[] = {"", "6,3", "2,3", "8,3,2,3"};

// Axis labels: 64, 0.05, 1.5e+04.
std::string tick_text(double v) {
    return fmt::format("{:.4g}", v);
}

std::string dash_attribute(std::size_t dash) {
    const char* pattern = kDashes[dash % std::size(kDashes)];
    return *pattern ? fmt::format(R"( stroke-dasharray="{}")", pattern) : std::string();
}

}  // namespace

std::string xml_escape(std::string_view text) {
    std::string out;
    for (const char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::string_view chart_color(std::size_t index) {
    return kColors[index % std::size(kColors)];
}

double nice_step(double span, int count) {
    const double raw = span / count;
    const double power = std::pow(10.0, std::floor(std::log10(raw)));
    for (const double m : {1.0, 2.0, 5.0, 10.0}) {
        if (m * power >= raw) {
            return m * power;
        }
    }
    return 10.0 * power;
}

std::string svg_line_chart(const LineChart& chart) {
    constexpr double kWidth = 900, kLeft = 80, kRight = 880, kTop = 50, kBottom = 400, kLegendTop = 440;
    double x_min = INFINITY, x_max = -INFINITY, y_min = INFINITY, y_max = -INFINITY;
    std::set<double> xs;
    for (const ChartSeries& s : chart.series) {
        for (const auto& [x, y] : s.points) {
            if (x > 0 && std::isfinite(x) && std::isfinite(y)) {
                xs.insert(x);
                x_min = std::min(x_min, x);
                x_max = std::max(x_max, x);
                y_min = std::min(y_min, y);
                y_max = std::max(y_max, y);
            }
        }
    }
    const double height = kLegendTop + 20.0 * static_cast<double>(chart.series.size()) + 20;
    std::ostringstream svg;
    svg << R"(<?xml version="1.0" encoding="UTF-8"?>)" << '\n'
        << fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" )"
                       R"(font-family="sans-serif" font-size="12">)",
                       kWidth, height, kWidth, height)
        << '\n'
        << R"(<rect width="100%" height="100%" fill="white"/>)" << '\n'
        << fmt::format(R"(<text x="{}" y="24" text-anchor="middle" font-size="16">{}</text>)", kWidth / 2,
                       xml_escape(chart.title))
        << '\n';
    if (xs.empty() || (chart.y_from_zero && !(y_max > 0.0))) {
        svg << fmt::format(R"(<text x="{}" y="200" text-anchor="middle">no results to plot</text>)", kWidth / 2)
            << "\n</svg>\n";
        return svg.str();
    }
    // The y range: from zero, or the data's with a margin (a flat line sits mid-plot).
    double y_low = 0.0;
    if (!chart.y_from_zero) {
        const double margin = y_max > y_min ? 0.1 * (y_max - y_min) : std::max(0.05 * std::fabs(y_max), 1e-9);
        y_low = y_min - margin;
        y_max += margin;
    }
    const double y_step = nice_step(y_max - y_low, 5);
    y_low = std::floor(y_low / y_step) * y_step;
    const double y_high = std::ceil(y_max / y_step) * y_step;
    const auto py = [&](double y) { return kBottom - (kBottom - kTop) * (y - y_low) / (y_high - y_low); };
    const double lx0 = std::log2(x_min), lx1 = std::log2(x_max);
    const auto px = [&](double x) {
        return lx1 > lx0 ? kLeft + 20 + (kRight - kLeft - 40) * (std::log2(x) - lx0) / (lx1 - lx0)
                         : (kLeft + kRight) / 2;
    };

    // Horizontal grid with labels, the axes, the axis titles.
    for (double y = y_low; y <= y_high + y_step * 0.5; y += y_step) {
        svg << fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#ddd"/>)", kLeft, py(y), kRight, py(y))
            << '\n'
            << fmt::format(R"(<text x="{}" y="{}" text-anchor="end">{}</text>)", kLeft - 6, py(y) + 4, tick_text(y))
            << '\n';
    }
    svg << fmt::format(R"(<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="black"/>)", kLeft, kBottom, kRight) << '\n'
        << fmt::format(R"(<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="black"/>)", kLeft, kTop, kBottom) << '\n'
        << fmt::format(R"x(<text transform="translate(18 {}) rotate(-90)" text-anchor="middle">{}</text>)x",
                       (kTop + kBottom) / 2, xml_escape(chart.y_title))
        << '\n';
    for (const double x : xs) {
        svg << fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">{}</text>)", px(x), kBottom + 18, tick_text(x))
            << '\n';
    }
    svg << fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">{} (log scale)</text>)", (kLeft + kRight) / 2,
                       kBottom + 38, xml_escape(chart.x_title))
        << '\n';

    for (std::size_t i = 0; i < chart.series.size(); ++i) {
        const ChartSeries& s = chart.series[i];
        const std::string_view color = chart_color(s.color);
        const std::string dash = dash_attribute(s.dash);
        svg << fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="2"{} points=")", color, dash);
        for (const auto& [x, y] : s.points) {
            svg << px(x) << ',' << py(y) << ' ';
        }
        svg << "\"/>\n";
        for (const auto& [x, y] : s.points) {
            svg << fmt::format(R"(<circle cx="{}" cy="{}" r="3" fill="{}"><title>{}: {}</title></circle>)", px(x),
                               py(y), color, tick_text(x), tick_text(y))
                << '\n';
        }
        const double ly = kLegendTop + 20.0 * static_cast<double>(i);
        svg << fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2"{}/>)", kLeft, ly,
                           kLeft + 30, ly, color, dash)
            << '\n'
            << fmt::format(R"(<text x="{}" y="{}">{}</text>)", kLeft + 38, ly + 4, xml_escape(s.label)) << '\n';
    }
    svg << "</svg>\n";
    return svg.str();
}

}  // namespace vkf::app
