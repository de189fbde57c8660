// `vkf-bench report`'s llama-bench table: rows of vkf-bench llama and of llama-bench itself
// in one table, vkformer's with their correctness figure (llama-bench's have none), and a
// curve of tokens/s per iteration for every sustained-mode row.

#include "apps/bench/llama_rows.hpp"
#include "apps/bench/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace vkf::bench {

namespace {

using json = nlohmann::ordered_json;

std::string text_of(const json& row, const char* key) {
    const auto it = row.find(key);
    if (it == row.end() || it->is_null()) {
        return "";
    }
    return it->is_string() ? it->get<std::string>() : it->dump();
}

std::optional<double> number_of(const json& row, const char* key) {
    const auto it = row.find(key);
    return it != row.end() && it->is_number() ? std::optional(it->get<double>()) : std::nullopt;
}

std::uint32_t count_of(const json& row, const char* key) {
    const std::optional<double> n = number_of(row, key);
    return n && *n > 0 ? static_cast<std::uint32_t>(*n) : 0;
}

LlamaTest test_of(const json& row) {
    return {.n_prompt = count_of(row, "n_prompt"),
            .n_gen = count_of(row, "n_gen"),
            .n_depth = count_of(row, "n_depth"),
            .sequences = std::max<std::uint32_t>(1, count_of(row, "vkf_sequences"))};
}

// Tokens/s of each iteration against the iteration number: throttling shows as a fall.
std::string sustained_svg(const std::vector<double>& ts, const std::string& title) {
    constexpr double kW = 640, kH = 220, kLeft = 60, kRight = 20, kTop = 30, kBottom = 40;
    const double top = *std::max_element(ts.begin(), ts.end()) * 1.1;
    const auto x = [&](std::size_t i) {
        return kLeft + (kW - kLeft - kRight) * (ts.size() == 1 ? 0.5 : static_cast<double>(i) / (ts.size() - 1));
    };
    const auto y = [&](double v) { return kTop + (kH - kTop - kBottom) * (1.0 - (top > 0 ? v / top : 0.0)); };
    std::string points;
    for (std::size_t i = 0; i < ts.size(); ++i) {
        points += fmt::format("{:.1f},{:.1f} ", x(i), y(ts[i]));
    }
    std::string svg = fmt::format(
        R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" viewBox="0 0 {0} {1}" role="img">)"
        R"(<text x="{2}" y="18" font-size="13">{3}</text>)"
        R"(<line x1="{2}" y1="{4}" x2="{2}" y2="{5}" stroke="#888"/><line x1="{2}" y1="{5}" x2="{6}" y2="{5}" stroke="#888"/>)"
        R"(<text x="4" y="{4}" font-size="11">{7:.3g}</text><text x="4" y="{5}" font-size="11">0 t/s</text>)"
        R"(<text x="{2}" y="{8}" font-size="11">iteration 1</text><text x="{6}" y="{8}" font-size="11" text-anchor="end">{9}</text>)"
        R"(<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{10}"/>)",
        kW, kH, kLeft, app::xml_escape(title), kTop, kH - kBottom, kW - kRight, top, kH - 12, ts.size(), points);
    for (std::size_t i = 0; i < ts.size(); ++i) {
        svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="#1f77b4"><title>{:.4g} t/s</title></circle>)",
                           x(i), y(ts[i]), ts[i]);
    }
    return svg + "</svg>";
}

}  // namespace

std::string llama_section(std::span<const ReportInput> inputs) {
    bool any = false;
    for (const ReportInput& in : inputs) {
        any = any || !in.llama_rows.empty();
    }
    if (!any) {
        return "";
    }
    std::string html =
        "<section id=\"llama\"><h2>llama-bench rows</h2><p>Rows of <code>vkf-bench llama</code> and of llama-bench "
        "itself in one table. <em>max rel err</em> is vkformer's correctness figure: the largest relative logit "
        "error against the float64 reference (llama-bench has none); <em>batched = alone</em> compares a batch's "
        "logits with the same sequences run alone.</p><div class=\"wide\"><table><tr><th>file</th><th>model</th>"
        "<th>size</th><th>backend</th><th>device</th><th>test</th><th>t/s</th><th>&#177;</th>"
        "<th>max rel err</th><th>batched = alone</th><th>of BW</th><th>status</th></tr>\n";
    std::string curves;
    for (std::size_t f = 0; f < inputs.size(); ++f) {
        for (std::size_t i = 0; i < inputs[f].llama_rows.size(); ++i) {
            const json& row = inputs[f].llama_rows[i];
            const std::string key = fmt::to_string(i);
            const std::string label = test_label(test_of(row));
            const std::string status = row.contains("vkf_status") ? text_of(row, "vkf_status") : "unchecked";
            html += fmt::format(
                "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>", status,
                app::xml_escape(inputs[f].label), app::xml_escape(text_of(row, "model_type")),
                app::xml_escape(fmt::format("{:.2f} MiB", number_of(row, "model_size").value_or(0) / 1048576.0)),
                app::xml_escape(text_of(row, "backends")), app::xml_escape(text_of(row, "gpu_info")),
                app::xml_escape(label));
            html += figure_cell(f, key, "avg_ts", number_of(row, "avg_ts"));
            html += figure_cell(f, key, "stddev_ts", number_of(row, "stddev_ts"), 3);
            html += figure_cell(f, key, "vkf_check_max_rel", number_of(row, "vkf_check_max_rel"), 2);
            html += figure_cell(f, key, "vkf_batched_max_rel", number_of(row, "vkf_batched_max_rel"), 2);
            html += figure_cell(f, key, "vkf_bandwidth_fraction", number_of(row, "vkf_bandwidth_fraction"), 3);
            html +=
                fmt::format("<td title=\"{}\">{}</td></tr>\n", app::xml_escape(text_of(row, "vkf_message")), status);
            const auto ts = row.find("samples_ts");
            const bool sustained = row.value("vkf_sustained", false);
            if (sustained && ts != row.end() && ts->is_array() && !ts->empty()) {
                std::vector<double> values;
                for (const json& v : *ts) {
                    values.push_back(v.is_number() ? v.get<double>() : 0.0);
                }
                curves += "<div class=\"plot\">" +
                          sustained_svg(values, fmt::format("{}: {} {}, sustained, t/s per iteration", inputs[f].label,
                                                            text_of(row, "model_type"), label)) +
                          "</div>\n";
            }
        }
    }
    html += "</table></div>\n" + curves + "</section>\n";
    return html;
}

}  // namespace vkf::bench
