#pragma once
// `vkf-bench report`: one self-contained HTML page (no script, no external resource) from
// result files of `vkf-bench run` and rows of `vkf-bench llama` or llama-bench itself: the
// devices (driver, limits, quirks, measured ceilings), each suite's figures against the
// ceilings with its SVG plot inline, the files side by side, and the llama-bench-style rows
// with their correctness column and sustained-mode curves.
//
// Every figure is in a cell that carries the exact number: <td data-file="F" data-case="K"
// data-field="N" data-value="V">, so that a reader (the report's test) can check the page
// against the JSON it came from.

#include "apps/bench/results.hpp"
#include "apps/common/svg_chart.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::bench {

struct ReportInput {
    std::string label;       // the file's stem, or --labels
    std::optional<Run> run;  // a vkf-bench run result file
    // Or rows as llama-bench's -o json / jsonl writes them (vkf-bench llama's or its own).
    std::vector<nlohmann::ordered_json> llama_rows;
};

// Reads either kind of file; throws vkf::Error naming the file for anything else.
ReportInput read_report_input(const std::filesystem::path& path, std::string label);

std::string report_html(std::span<const ReportInput> inputs, std::string_view title);

// --- the page's parts (report_runs.cpp, report_llama.cpp) ---
// A figure cell: the number shown with `digits` significant digits, the exact one in data-value.
std::string figure_cell(std::size_t file, std::string_view key, std::string_view field, std::optional<double> value,
                        int digits = 4);
std::string devices_section(std::span<const ReportInput> inputs);
std::string suites_section(std::span<const ReportInput> inputs);
std::string llama_section(std::span<const ReportInput> inputs);

}  // namespace vkf::bench
