#pragma once
// Command-line parsing shared by the apps: one loop over the arguments where each option
// takes its value as "--name value" or "--name=value", flags refuse a value, and the
// number, list and --limits parsers word their complaints alike. A bad command line is a
// UsageError, which the apps report with a hint to --help and exit code 2.

#include "runtime/limits.hpp"

#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::cli {

inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct UsageError {
    std::string message;
};

// Walks the arguments: while (args.next()) { if (args.name() == "--x") v = args.value(); ... }
class ArgReader {
public:
    explicit ArgReader(std::span<char* const> args) : args_(args) {}
    ArgReader(int argc, char** argv, int first = 1)
        : args_(argv + first, static_cast<std::size_t>(argc > first ? argc - first : 0)) {}

    // Moves to the next argument; false when none is left.
    bool next();
    // The option's name: the argument up to '=' for "--name=value", else the argument.
    std::string_view name() const { return name_; }
    std::string_view arg() const { return arg_; }
    // The option's value: after '=', else the next argument (consumed). Throws UsageError.
    std::string value();
    // Throws UsageError when a flag was given a value ("--json=1").
    void flag() const;
    // Throws UsageError "unknown option '...'".
    [[noreturn]] void unknown() const;
    // The arguments not yet read (for a subcommand's own parser).
    std::span<char* const> rest() const { return args_.subspan(index_); }

private:
    std::span<char* const> args_;
    std::size_t index_ = 0; // the next argument to read
    std::string_view arg_;
    std::string_view name_;
    std::optional<std::string> inline_value_;
};

// A whole number >= min ("--reps needs a whole number >= 1, not 'x'").
template <class T>
T parse_integer(std::string_view option, std::string_view text, T min) {
    T value{};
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < min) {
        throw UsageError{std::string(option) + " needs a whole number >= " + std::to_string(min) + ", not '" +
                         std::string(text) + "'"};
    }
    return value;
}
std::uint32_t parse_count(std::string_view option, std::string_view text, std::uint32_t min);
// Comma-separated whole numbers, each >= min.
std::vector<std::uint32_t> parse_counts(std::string_view option, std::string_view text, std::uint32_t min = 1);
// Comma-separated words, each one of `allowed`.
std::vector<std::string> parse_words(std::string_view option, std::string_view text,
                                     std::initializer_list<std::string_view> allowed);
// One of `allowed` ("--dtype is f32, f16 or both, not 'f64'").
std::string parse_choice(std::string_view option, std::string_view text,
                         std::initializer_list<std::string_view> allowed);
// A finite number; a positive one.
double parse_number(std::string_view option, std::string_view text);
double parse_positive(std::string_view option, std::string_view text);
// --limits SPEC merged over what earlier --limits gave.
LimitOverrides parse_limits(std::string_view option, std::string_view text, const LimitOverrides& so_far);

// The command line as one string, arguments with spaces or quotes quoted, for result files.
std::string join_command_line(int argc, char** argv);

} // namespace vkf::cli
