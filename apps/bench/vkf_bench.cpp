// vkf-bench: benchmarks of vkformer on the selected Vulkan device, made to compare GPUs
// of different vendors. `run` measures the device's ceilings and the kernel suites and
// writes a result file; `compare` puts result files from any machines side by side, with
// SVG plots; `attention` is the attention suite alone, tiled against naive.

#include "apps/bench/commands.hpp"
#include "apps/common/app_main.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr const char* kAbout =
    "Benchmarks vkformer on one Vulkan device and compares result files across devices.\n"
    "\n"
    "commands:\n"
    "  run         device ceilings (bandwidth, FMA rates, dispatch overhead, transfers) and\n"
    "              the attention, matmul, block and model suites, placed against the\n"
    "              ceilings; --out FILE writes a result file; --quick takes a few minutes\n"
    "              on lavapipe\n"
    "  compare     result files side by side, with an SVG plot per suite\n"
    "  attention   tiled (flash) ALiBi attention against the naive three-pass baseline\n"
    "  llama       llama-bench's pp/tg/pg tests on a checkpoint in its json, jsonl, csv or md\n"
    "              form, each row checked against the float64 reference; --sustained N\n"
    "              runs N repetitions back to back (throttling as a curve)\n"
    "  report      one self-contained HTML page of result files and llama rows: devices,\n"
    "              figures against the ceilings, plots, files side by side, correctness\n"
    "\n"
    "vkf-bench [run options] is the same as vkf-bench run [run options].\n";

constexpr const char* kFooter = "Run 'vkf-bench <command> --help' for a command's options.";

// The command line as one string, arguments with spaces or quotes quoted for a POSIX
// shell, for result files.
std::string join_command_line(int argc, char** argv) {
    std::string line;
    for (int i = 0; i < argc; ++i) {
        const std::string_view arg = argv[i];
        line += i == 0 ? "" : " ";
        if (!arg.empty() && arg.find_first_of(" \t\"'\\$") == std::string_view::npos) {
            line += arg;
            continue;
        }
        line += '\'';
        for (const char c : arg) {
            line += c == '\'' ? std::string("'\\''") : std::string(1, c);
        }
        line += '\'';
    }
    return line;
}

// "vkf-bench --quick" is "vkf-bench run --quick": options alone mean a run.
std::vector<char*> with_run_implied(int argc, char** argv) {
    std::vector<char*> args(argv, argv + argc);
    if (argc > 1) {
        const std::string_view first = argv[1];
        if (first.starts_with("-") && first != "-h" && first != "--help") {
            static char run[] = "run";
            args.insert(args.begin() + 1, run);
        }
    }
    return args;
}

}  // namespace

int main(int argc, char** argv) {
    vkf::app::CommandLine cli("vkf-bench", kAbout);
    const std::vector<vkf::bench::Command> commands = {
        vkf::bench::add_run_command(cli, join_command_line(argc, argv)),
        vkf::bench::add_compare_command(cli),
        vkf::bench::add_attention_command(cli),
        vkf::bench::add_llama_command(cli),
        vkf::bench::add_report_command(cli),
    };
    for (const vkf::bench::Command& command : commands) {
        command.cli->group("");  // listed in kAbout, with more words than one line of CLI11's list
    }
    cli.footer(kFooter);  // after the subcommands, which would inherit it
    cli.require_subcommand(0, 1);
    std::vector<char*> args = with_run_implied(argc, argv);
    return vkf::app::run_app(cli, static_cast<int>(args.size()), args.data(), [&] {
        for (const vkf::bench::Command& command : commands) {
            if (command.cli->parsed()) {
                return command.run();
            }
        }
        throw vkf::app::UsageError("name a command, e.g. vkf-bench run --quick");
    });
}
