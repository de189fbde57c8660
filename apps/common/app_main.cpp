#include "apps/common/app_main.hpp"

#include "apps/common/standard_streams.hpp"
#include "apps/common/stop_signals.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <memory>

namespace vkf::app {

namespace {

// Shows an option as "--name VALUE" and nothing more: the description says what is
// required or excluded in words, where CLI11 would append "REQUIRED" or "Excludes: ...".
class HelpFormatter : public CLI::Formatter {
public:
    std::string make_option_opts(const CLI::Option* option) const override {
        return option->get_option_text().empty() ? "" : " " + option->get_option_text();
    }
};

}  // namespace

CommandLine::CommandLine(std::string name, std::string description)
    : CLI::App(std::move(description), std::move(name)) {
    set_help_flag("-h,--help", "show this help");
    // Last wins, as in most Unix tools: a script's defaults can be overridden by appending.
    option_defaults()->take_last()->disable_flag_override();
    formatter(std::make_shared<HelpFormatter>());
    get_formatter()->column_width(26);
}

namespace {

// "vkf-bench run": the program and the subcommands given, for messages about them.
std::string program_name(const CLI::App& cli) {
    std::string name = cli.get_name();
    for (const CLI::App* app = &cli; !app->get_subcommands().empty();) {
        app = app->get_subcommands().front();
        name += " " + app->get_name();
    }
    return name;
}

int usage_error(const CLI::App& cli, const char* message) {
    std::fflush(stdout);
    const std::string program = program_name(cli);
    fmt::print(stderr, "{}: {} (see {} --help)\n", program, message, program);
    return kExitUsage;
}

int run_body(CLI::App& cli, int argc, char** argv, const std::function<int()>& body) {
    try {
        cli.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        fmt::print("{}", cli.help());  // the help of the subcommand given, if any
        return kExitOk;
    } catch (const CLI::ParseError& e) {
        return usage_error(cli, e.what());
    } catch (const UsageError& e) {  // from an option's own parser
        return usage_error(cli, e.what());
    }
    try {
        return body();
    } catch (const UsageError& e) {
        return usage_error(cli, e.what());
    } catch (const std::exception& e) {  // vkf::Error, a filesystem error, std::bad_alloc...
        std::fflush(stdout);
        fmt::print(stderr, "{}: error: {}\n", program_name(cli), e.what());
        return kExitFailure;
    }
}

}  // namespace

int run_app(CLI::App& cli, int argc, char** argv, const std::function<int()>& body) {
    ensure_standard_descriptors();
    int status = run_body(cli, argc, argv, body);
    if (const int signalled = stop_signal_status(); signalled != 0) {
        status = signalled;  // stopped early by Ctrl-C or SIGTERM (stop_signals.hpp)
    }
    // Output that did not reach its destination (a full disk, a closed pipe) is a failure; a
    // program that failed already said why (often that very write).
    const std::string_view error = close_stdout();
    if (status == kExitOk && !error.empty() && stop_signal() == 0) {
        fmt::print(stderr, "{}: error: {}\n", program_name(cli), error);
        return kExitFailure;
    }
    return status;
}

}  // namespace vkf::app
