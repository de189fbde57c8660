#pragma once
// Line charts as SVG documents, written directly (no plotting library): what vkf-bench
// compare and vkf-perplexity draw.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vkf::app {

struct ChartSeries {
    std::string label;
    std::vector<std::pair<double, double>> points;  // (x, y), drawn in order
    std::size_t color = 0;                          // index into the palette
    std::size_t dash = 0;                           // 0 solid, then dash patterns
};

struct LineChart {
    std::string title;
    std::string x_title;  // " (log scale)" is added: x is drawn on a log2 scale
    std::string y_title;
    bool y_from_zero = true;  // else the y axis spans the data (differences of a few %)
    std::vector<ChartSeries> series;
};

std::string svg_line_chart(const LineChart& chart);

// For the bar charts vkf-bench draws itself.
std::string xml_escape(std::string_view text);
std::string_view chart_color(std::size_t index);
// A tick step of 1, 2 or 5 times a power of ten giving about `count` ticks over `span`.
double nice_step(double span, int count);

}  // namespace vkf::app
