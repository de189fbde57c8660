#pragma once
// The subcommands of vkf-bench. Each declares its options on a subcommand of `bench` and
// returns what runs when that subcommand was given (vkf_bench.cpp picks it).

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace vkf::bench {

struct Command {
    CLI::App* cli = nullptr;
    std::function<int()> run;
};

// `vkf-bench run`: the suites of the registry, a table, a result file (--out).
// `command_line` is recorded in the result file.
Command add_run_command(CLI::App& bench, const std::string& command_line);
// `vkf-bench compare A.json B.json ...`: result files side by side, SVG plots.
Command add_compare_command(CLI::App& bench);
// `vkf-bench attention`: the attention suite alone, tiled against naive, with the options,
// defaults and JSON document of the former attention benchmark.
Command add_attention_command(CLI::App& bench);
// `vkf-bench llama`: llama-bench's tests and output forms on a checkpoint, with correctness.
Command add_llama_command(CLI::App& bench);
// `vkf-bench report FILES...`: one self-contained HTML page of result files and llama rows.
Command add_report_command(CLI::App& bench);

}  // namespace vkf::bench
