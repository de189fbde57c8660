#pragma once
// What every program's main() shares: the command line (CLI11) set up the same way, and
// one exit-code policy. A program declares its options on a CommandLine, then hands it to
// run_app with the work to do once they are parsed:
//
//     int main(int argc, char** argv) {
//         vkf::app::CommandLine cli("vkf-info", kAbout);
//         Options options;
//         declare_options(cli, options); // cli.add_flag("--json", options.json, ...), ...
//         return vkf::app::run_app(cli, argc, argv, [&] { return run(options); });
//     }

#include "apps/common/exit_codes.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <stdexcept>
#include <string>

namespace vkf::app {

// A command line that parses but does not make sense ("--q, --k and --v are required").
// Thrown by option callbacks and by the checks a program makes after parsing.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A CLI11 App with the conventions of every program: "-h, --help"; an option given twice
// keeps its last value; a flag refuses a value ("--json=1"). Subcommands inherit them.
class CommandLine : public CLI::App {
public:
    CommandLine(std::string name, std::string description);
};

// Parses argv into the options declared on `cli`, runs `body` and maps what happens to the
// exit codes of exit_codes.hpp: --help prints the (sub)command's help on stdout and returns 0; a bad
// command line or a UsageError prints "<program>: <message> (see <program> --help)";
// an exception escaping `body` prints "<program>: error: <message>". <program> is the
// program's name, followed by the subcommand's when one was given.
int run_app(CLI::App& cli, int argc, char** argv, const std::function<int()>& body);

}  // namespace vkf::app
