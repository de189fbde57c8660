// `vkf-bench compare` (commands.hpp): result files side by side, and SVG plots.

#include "apps/bench/commands.hpp"
#include "apps/bench/comparison.hpp"
#include "apps/bench/svg_plot.hpp"
#include "apps/common/options.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

namespace vkf::bench {

namespace {

constexpr const char* kAbout =
    "Reads result files written by `vkf-bench run --out` (on any machine), prints every case\n"
    "side by side with each file's median time and its speed relative to the first file\n"
    "(higher is faster: GFLOP/s, GB/s or dispatches/s where known), and writes one SVG plot\n"
    "per suite: attention GFLOP/s against sequence length (a line per file and series),\n"
    "other suites as bars of speed relative to the first file.\n";

struct CompareOptions {
    std::vector<std::string> files;
    std::optional<std::vector<std::string>> labels;
    std::string out_dir = ".";
    bool no_plots = false;
};

void declare_options(CLI::App& cli, CompareOptions& o) {
    using namespace app;
    cli.add_option("files", o.files, "result files (JSON); the first is the reference")->option_text("")->take_all();
    add_text(cli, "--out-dir", "DIR", o.out_dir, "where the SVG files go (default: the current directory)");
    add_parsed_option(cli, "--labels", "A,B,...", "names for the files in the table and plots (default: file names)",
                      [&o](const std::string& text) { o.labels = split_list(text); });
    cli.add_flag("--no-plots", o.no_plots, "only the table");
}

int compare(const CompareOptions& o) {
    if (o.files.empty()) {
        throw app::UsageError("name at least one result file");
    }
    if (o.labels && o.labels->size() != o.files.size()) {
        throw app::UsageError(fmt::format("--labels gives {} names for {} files", o.labels->size(), o.files.size()));
    }
    std::vector<Run> runs;
    for (const std::string& f : o.files) {
        runs.push_back(read_run_file(f));
    }
    std::vector<std::string> labels;
    for (const std::string& f : o.files) {
        labels.push_back(std::filesystem::path(f).stem().string());
    }
    labels = o.labels.value_or(labels);
    print_comparison(std::cout, runs, labels);
    if (!o.no_plots) {
        for (const auto& path : write_plots(o.out_dir, runs, labels)) {
            std::cout << "plot: " << path.string() << '\n';
        }
    }
    return app::kExitOk;
}

}  // namespace

Command add_compare_command(CLI::App& bench) {
    CLI::App* cli = bench.add_subcommand("compare", kAbout);
    auto options = std::make_shared<CompareOptions>();
    declare_options(*cli, *options);
    return Command{cli, [options] { return compare(*options); }};
}

}  // namespace vkf::bench
