// `vkf-bench report`'s parts from vkf-bench run result files: the device table and every
// suite's figures against the ceilings, side by side across files, with the suite's plot.

#include "apps/bench/comparison.hpp"
#include "apps/bench/report.hpp"
#include "apps/bench/svg_plot.hpp"

#include <fmt/format.h>

#include <cmath>

namespace vkf::bench {

std::string figure_cell(std::size_t file, std::string_view key, std::string_view field, std::optional<double> value,
                        int digits) {
    if (!value || !std::isfinite(*value)) {
        return "<td class=\"none\">-</td>";
    }
    // data-value: the shortest text that reads back as the same double.
    return fmt::format(R"(<td data-file="{}" data-case="{}" data-field="{}" data-value="{}">{:.{}g}</td>)", file,
                       app::xml_escape(key), field, *value, *value, digits);
}

namespace {

std::string text_of(const nlohmann::ordered_json& object, const char* key) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) {
        return "";
    }
    return it->is_string() ? it->get<std::string>() : it->dump();
}

// The runs of the inputs, with their labels and file indices.
struct RunView {
    std::vector<Run> runs;
    std::vector<std::string> labels;
    std::vector<std::size_t> files;
};

RunView runs_of(std::span<const ReportInput> inputs) {
    RunView v;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i].run) {
            v.runs.push_back(*inputs[i].run);
            v.labels.push_back(inputs[i].label);
            v.files.push_back(i);
        }
    }
    return v;
}

std::string quirks_text(const nlohmann::ordered_json& quirks) {
    std::vector<std::string> on;
    for (const auto& [key, value] : quirks.items()) {
        if (value.is_boolean() && value.get<bool>()) {
            on.push_back(key);
        }
    }
    std::string text = on.empty() ? "none" : fmt::format("{}", fmt::join(on, ", "));
    if (quirks.contains("reasons") && quirks["reasons"].is_array()) {
        for (const auto& reason : quirks["reasons"]) {
            text += fmt::format("; {}", reason.is_string() ? reason.get<std::string>() : reason.dump());
        }
    }
    return text;
}

}  // namespace

std::string devices_section(std::span<const ReportInput> inputs) {
    const RunView v = runs_of(inputs);
    if (v.runs.empty()) {
        return "";
    }
    std::string html = "<section id=\"devices\"><h2>Devices</h2><div class=\"wide\"><table><tr><th></th>";
    for (const std::string& label : v.labels) {
        html += fmt::format("<th>{}</th>", app::xml_escape(label));
    }
    html += "</tr>\n";
    const auto text_row = [&](const char* title, const auto& get) {
        html += fmt::format("<tr><th>{}</th>", title);
        for (const Run& run : v.runs) {
            html += fmt::format("<td>{}</td>", app::xml_escape(get(run)));
        }
        html += "</tr>\n";
    };
    text_row("device", [](const Run& r) { return text_of(r.device, "name"); });
    text_row("vendor, type", [](const Run& r) {
        return fmt::format("{}, {}", text_of(r.device, "vendor_name"), text_of(r.device, "type"));
    });
    text_row("driver", [](const Run& r) {
        return fmt::format("{} ({}), id {}", text_of(r.device, "driver_name"), text_of(r.device, "driver_info"),
                           text_of(r.device, "driver_id"));
    });
    text_row("driver version", [](const Run& r) { return text_of(r.device, "driver_version_text"); });
    text_row("Vulkan API", [](const Run& r) { return text_of(r.device, "api_version"); });
    text_row("quirks", [](const Run& r) { return quirks_text(r.quirks); });
    text_row("limit overrides", [](const Run& r) { return r.limit_overrides; });
    text_row("vkformer", [](const Run& r) {
        return fmt::format("{} {}{}", r.vkformer_version, r.git_commit.substr(0, 12), r.git_dirty ? " (dirty)" : "");
    });
    text_row("run", [](const Run& r) { return fmt::format("{}: {}", r.created_utc, r.command_line); });
    const auto ceiling_row = [&](const char* title, const char* field, std::optional<double> Ceilings::*member) {
        html += fmt::format("<tr><th>{}</th>", title);
        for (std::size_t i = 0; i < v.runs.size(); ++i) {
            html += figure_cell(v.files[i], "ceilings", field, v.runs[i].ceilings.*member);
        }
        html += "</tr>\n";
    };
    ceiling_row("memory bandwidth, GB/s", "bandwidth_gbps", &Ceilings::bandwidth_gbps);
    ceiling_row("fp32 FMA, GFLOP/s", "fp32_gflops", &Ceilings::fp32_gflops);
    ceiling_row("fp16 FMA, GFLOP/s", "fp16_gflops", &Ceilings::fp16_gflops);
    ceiling_row("dispatches/s", "dispatches_per_s", &Ceilings::dispatches_per_s);
    ceiling_row("upload, GB/s", "upload_gbps", &Ceilings::upload_gbps);
    ceiling_row("download, GB/s", "download_gbps", &Ceilings::download_gbps);
    html += "<tr><th>effective limits</th>";
    for (const Run& run : v.runs) {
        html += "<td><details><summary>show</summary><table class=\"limits\">";
        for (const auto& [key, value] : run.effective_limits.items()) {
            html += fmt::format("<tr><td>{}</td><td>{}</td></tr>", app::xml_escape(key), app::xml_escape(value.dump()));
        }
        html += "</table></details></td>";
    }
    html += "</tr>\n</table></div></section>\n";
    return html;
}

std::string suites_section(std::span<const ReportInput> inputs) {
    const RunView v = runs_of(inputs);
    if (v.runs.empty()) {
        return "";
    }
    const std::vector<std::pair<std::string, std::string>> cases = all_cases(v.runs);
    std::string html;
    for (const Suite& suite : suite_registry()) {
        bool any = false;
        for (const auto& [s, name] : cases) {
            any = any || s == suite.name;
        }
        if (!any) {
            continue;
        }
        html += fmt::format("<section class=\"suite\" id=\"suite-{0}\"><h2>{0}</h2><p>{1}</p>\n", suite.name,
                            app::xml_escape(suite.description));
        if (suite.name != "ceilings") {
            std::string svg = svg_plot(suite, v.runs, v.labels);
            if (svg.starts_with("<?xml")) {
                svg.erase(0, svg.find('\n') + 1);  // inline SVG takes no XML declaration
            }
            html += "<div class=\"plot\">" + svg + "</div>\n";
        }
        html += "<div class=\"wide\"><table><tr><th rowspan=\"2\">case</th>";
        const bool ratios = v.runs.size() > 1;
        for (const std::string& label : v.labels) {
            html += fmt::format("<th colspan=\"{}\">{}</th>", ratios ? 6 : 5, app::xml_escape(label));
        }
        html += "</tr><tr>";
        for (std::size_t i = 0; i < v.runs.size(); ++i) {
            html += "<th>median ms</th><th>GFLOP/s</th><th>GB/s</th><th>of FMA</th><th>of BW</th>";
            html += ratios ? "<th>speed vs first</th>" : "";
        }
        html += "</tr>\n";
        for (const auto& [s, name] : cases) {
            if (s != suite.name) {
                continue;
            }
            const std::string key = s + "/" + name;
            html += fmt::format("<tr><td class=\"case\">{}</td>", app::xml_escape(name));
            const Result* first = find_result(v.runs[0], s, name);
            for (std::size_t i = 0; i < v.runs.size(); ++i) {
                const Result* r = find_result(v.runs[i], s, name);
                if (r == nullptr || r->status != Status::Ok) {
                    const std::string status = r == nullptr ? "not run" : to_string(r->status);
                    html += fmt::format("<td colspan=\"{}\" class=\"{}\" title=\"{}\">{}</td>", ratios ? 6 : 5, status,
                                        app::xml_escape(r ? r->message : ""), status);
                    continue;
                }
                const std::size_t f = v.files[i];
                html += figure_cell(f, key, "median_ms", r->stats ? std::optional(r->stats->median) : std::nullopt);
                html += figure_cell(f, key, "gflops", r->gflops);
                html += figure_cell(f, key, "gbps", r->gbps);
                html += figure_cell(f, key, "fma_fraction", r->fma_fraction, 3);
                html += figure_cell(f, key, "bandwidth_fraction", r->bandwidth_fraction, 3);
                if (ratios) {
                    const std::optional<double> mine = speed_of(*r);
                    const std::optional<double> base = first ? speed_of(*first) : std::nullopt;
                    html += figure_cell(f, key, "speed_vs_first",
                                        mine && base && *base > 0 ? std::optional(*mine / *base) : std::nullopt, 3);
                }
            }
            html += "</tr>\n";
        }
        html += "</table></div></section>\n";
    }
    return html;
}

}  // namespace vkf::bench
