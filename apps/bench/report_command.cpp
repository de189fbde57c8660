// `vkf-bench report` (commands.hpp, report.hpp): result files of any machines into one
// self-contained HTML page.

#include "apps/bench/commands.hpp"
#include "apps/bench/report.hpp"
#include "apps/common/options.hpp"
#include "base/error.hpp"
#include "base/files.hpp"
#include "host/io/json.hpp"
#include "vkf_version.hpp"

#include <fmt/format.h>

#include <memory>
#include <optional>

namespace vkf::bench {

namespace {

constexpr const char* kAbout =
    "Writes one self-contained HTML page (no script, nothing fetched) from result files of\n"
    "`vkf-bench run --out` and rows of `vkf-bench llama -o json|jsonl` or of llama-bench\n"
    "itself: the devices (driver, measured ceilings, quirks, effective limits), each suite's\n"
    "figures against the ceilings with its plot, the files side by side (speed relative to\n"
    "the first), and the llama-bench rows with vkformer's correctness column and the curves of\n"
    "sustained-mode rows.";

// The page's style: readable tables that scroll sideways when many files are side by side.
constexpr const char* kStyle = R"(
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; font-size: 0.85em; }
td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: right; vertical-align: top; }
th { background: #f3f3f3; } td.case, #devices td, #llama td:nth-child(-n+6) { text-align: left; }
td.skipped, td.none { color: #888; } td.failed, tr.failed td { color: #b00; }
.wide { overflow-x: auto; } .plot svg { max-width: 100%; height: auto; }
)";

struct ReportOptions {
    std::vector<std::string> files;
    std::optional<std::vector<std::string>> labels;
    std::string out = "vkf-bench-report.html";
    std::string title = "vkformer benchmark report";
};

bool is_llama_row(const nlohmann::ordered_json& j) {
    return j.is_object() && j.contains("avg_ts") && j.contains("n_prompt") && j.contains("n_gen");
}

}  // namespace

ReportInput read_report_input(const std::filesystem::path& path, std::string label) {
    const std::string name = path.string();
    const std::string text = read_file(path, std::uint64_t{256} << 20, "result file");
    ReportInput input{.label = std::move(label)};
    const std::size_t first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '[') {  // llama-bench's -o json
        const nlohmann::ordered_json rows = to_nlohmann(parse_json(text, name));
        for (const auto& row : rows) {
            if (!is_llama_row(row)) {
                throw Error(
                    fmt::format("{}: an element that is not a llama-bench row (no avg_ts, n_prompt, n_gen)", name));
            }
            input.llama_rows.push_back(row);
        }
        return input;
    }
    // One document (a result file, or one row), else JSON Lines (llama-bench -o jsonl).
    std::optional<JsonValue> whole;
    try {
        whole = parse_json(text, name);
    } catch (const Error&) {
    }
    if (whole) {
        if (whole->is_object() && whole->find("schema") != nullptr) {
            input.run = read_run(*whole);
            return input;
        }
        const nlohmann::ordered_json row = to_nlohmann(*whole);
        if (!is_llama_row(row)) {
            throw Error(fmt::format("{}: neither a vkf-bench result file (no 'schema') nor llama-bench rows", name));
        }
        input.llama_rows.push_back(row);
        return input;
    }
    // jsonl: a row per line.
    std::size_t line_start = 0, line_number = 0;
    while (line_start < text.size()) {
        const std::size_t end = std::min(text.find('\n', line_start), text.size());
        ++line_number;
        const std::string_view line(text.data() + line_start, end - line_start);
        if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
            const nlohmann::ordered_json row =
                to_nlohmann(parse_json(line, fmt::format("{}, line {}", name, line_number)));
            if (!is_llama_row(row)) {
                throw Error(fmt::format(
                    "{}: neither a vkf-bench result file (no 'schema') nor llama-bench rows (line {} has no avg_ts)",
                    name, line_number));
            }
            input.llama_rows.push_back(row);
        }
        line_start = end + 1;
    }
    return input;
}

std::string report_html(std::span<const ReportInput> inputs, std::string_view title) {
    std::string files;
    for (const ReportInput& in : inputs) {
        files += fmt::format("<li>{}: {}</li>", app::xml_escape(in.label),
                             in.run ? fmt::format("vkf-bench run, {} results", in.run->results.size())
                                    : fmt::format("{} llama-bench rows", in.llama_rows.size()));
    }
    return fmt::format(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{0}</title>"
        "<style>{1}</style></head><body>\n<h1>{0}</h1><p>vkformer {2}, written {3}. Figures: median of the "
        "repetitions; <em>of FMA</em> and <em>of BW</em> are fractions of the device's measured fp32 FMA rate and "
        "copy bandwidth.</p><ul>{4}</ul>\n{5}{6}{7}</body></html>\n",
        app::xml_escape(title), kStyle, build::kVersion, utc_now_iso8601(), files, devices_section(inputs),
        llama_section(inputs), suites_section(inputs));
}

namespace {

int report(const ReportOptions& o) {
    if (o.files.empty()) {
        throw app::UsageError("name at least one result file");
    }
    if (o.labels && o.labels->size() != o.files.size()) {
        throw app::UsageError(fmt::format("--labels gives {} names for {} files", o.labels->size(), o.files.size()));
    }
    std::vector<ReportInput> inputs;
    for (std::size_t i = 0; i < o.files.size(); ++i) {
        const std::string label = o.labels ? (*o.labels)[i] : std::filesystem::path(o.files[i]).stem().string();
        inputs.push_back(read_report_input(o.files[i], label));
    }
    write_file_atomically(o.out, report_html(inputs, o.title), "vkf-bench report --out");
    fmt::print("vkf-bench report: wrote {}\n", o.out);
    return app::kExitOk;
}

}  // namespace

Command add_report_command(CLI::App& bench) {
    CLI::App* cli = bench.add_subcommand("report", kAbout);
    auto o = std::make_shared<ReportOptions>();
    cli->add_option("files", o->files, "result files: vkf-bench run's, llama rows (json or jsonl)")
        ->option_text("")
        ->take_all();
    app::add_text(*cli, "--out", "FILE", o->out, "the HTML file (default vkf-bench-report.html)");
    app::add_text(*cli, "--title", "TEXT", o->title, "the page's title");
    app::add_parsed_option(*cli, "--labels", "A,B,...", "names for the files (default: file names)",
                           [o](const std::string& text) { o->labels = app::split_list(text); });
    return Command{cli, [o] { return report(*o); }};
}

}  // namespace vkf::bench
