#pragma once
// Options of the programs' command lines, on top of CLI11: each option's text goes through
// one of the parsers below, so that every program words its complaints alike and names
// the option ("--reps needs a whole number >= 1, not 'x'"). The parsers throw UsageError.

#include "apps/common/app_main.hpp"
#include "host/quant/quant_format.hpp"
#include "host/spec/model_config.hpp"
#include "runtime/context.hpp"
#include "runtime/limits.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace vkf::app {

// --- parsers -------------------------------------------------------------------------

// A whole number >= min, in decimal.
template <class T>
T parse_integer(std::string_view option, std::string_view text, T min) {
    T value{};
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < min) {
        throw UsageError(std::string(option) + " needs a whole number >= " + fmt::to_string(min) + ", not '" +
                         std::string(text) + "'");
    }
    return value;
}
// Comma-separated whole numbers, each >= min.
std::vector<std::uint32_t> parse_counts(std::string_view option, std::string_view text, std::uint32_t min = 1);
// A finite double.
double parse_number(std::string_view option, std::string_view text);
// A finite number > 0.
double parse_positive(std::string_view option, std::string_view text);
// One of `allowed` ("--dtype is f32, f16 or both, not 'f64'").
std::string parse_choice(std::string_view option, std::string_view text, const std::vector<std::string>& allowed);
// Comma-separated words, each one of `allowed`.
std::vector<std::string> parse_words(std::string_view option, std::string_view text,
                                     const std::vector<std::string>& allowed);
// A byte count with an optional K, M or G suffix (binary), e.g. 512M.
std::uint64_t parse_size(std::string_view option, std::string_view text);
// --limits SPEC (LimitOverrides::parse) merged over what earlier --limits gave.
LimitOverrides parse_limits(std::string_view option, std::string_view text, const LimitOverrides& so_far);
// "a,b,,c" -> {"a", "b", "", "c"}.
std::vector<std::string> split_list(std::string_view text);
// "f32, f16 or both".
std::string alternatives(const std::vector<std::string>& words);

// --- declaring options -----------------------------------------------------------------

// An option with a value ("--name value" or "--name=value") that `parse` stores. It runs
// once per occurrence, in order, so a later one overrides an earlier one (or, for
// --limits, merges over it). `value_name` follows the option in the help ("--reps N").
CLI::Option* add_parsed_option(CLI::App& cli, const std::string& name, const std::string& value_name,
                               const std::string& description, std::function<void(const std::string&)> parse);

// The type an option stores into T or std::optional<T>.
template <class Target>
struct stored {
    using type = Target;
};
template <class T>
struct stored<std::optional<T>> {
    using type = T;
};
template <class Target>
using stored_t = typename stored<Target>::type;

// Text as given (a path, a device name).
template <class Target>
CLI::Option* add_text(CLI::App& cli, const std::string& name, const std::string& value_name, Target& target,
                      const std::string& description) {
    return add_parsed_option(cli, name, value_name, description, [&target](const std::string& text) { target = text; });
}

// A whole number >= min.
template <class Target>
CLI::Option* add_integer(CLI::App& cli, const std::string& name, const std::string& value_name, Target& target,
                         stored_t<Target> min, const std::string& description) {
    return add_parsed_option(cli, name, value_name, description, [&target, name, min](const std::string& text) {
        target = parse_integer<stored_t<Target>>(name, text, min);
    });
}

// Comma-separated whole numbers, each >= min, into std::vector<std::uint32_t> or an optional one.
template <class Target>
CLI::Option* add_counts(CLI::App& cli, const std::string& name, const std::string& value_name, Target& target,
                        const std::string& description, std::uint32_t min = 1) {
    return add_parsed_option(cli, name, value_name, description,
                             [&target, name, min](const std::string& text) { target = parse_counts(name, text, min); });
}

// A finite number (positive_only: > 0) into a float or double that must hold it.
template <class Target>
CLI::Option* add_number(CLI::App& cli, const std::string& name, const std::string& value_name, Target& target,
                        const std::string& description, bool positive_only = false) {
    return add_parsed_option(
        cli, name, value_name, description, [&target, name, positive_only](const std::string& text) {
            using T = stored_t<Target>;
            const double value = positive_only ? parse_positive(name, text) : parse_number(name, text);
            if (std::fabs(value) > static_cast<double>(std::numeric_limits<T>::max())) {
                throw UsageError(name + " needs a finite number, not '" + text + "'");
            }
            target = static_cast<T>(value);
        });
}

// One word of `choices`, stored as the value paired with it. The help shows "a|b|c".
template <class Target>
CLI::Option* add_choice(CLI::App& cli, const std::string& name, Target& target,
                        std::vector<std::pair<std::string, stored_t<Target>>> choices, const std::string& description) {
    std::vector<std::string> words;
    std::string value_name;
    for (const auto& choice : choices) {
        words.push_back(choice.first);
        value_name += (value_name.empty() ? "" : "|") + choice.first;
    }
    return add_parsed_option(cli, name, value_name, description,
                             [&target, name, words, choices](const std::string& text) {
                                 const std::string word = parse_choice(name, text, words);
                                 for (const auto& [w, value] : choices) {
                                     if (w == word) {
                                         target = value;
                                     }
                                 }
                             });
}

// --weights f32|f16|q8_0|q4_0: the weights' storage on the device (WeightFormat), unset unless given.
CLI::Option* add_weight_format(CLI::App& cli, std::optional<WeightFormat>& target, const std::string& description);

// --window W: the key window of local attention (AttentionParams::window), over the model's
// own (MPT attn_config.sliding_window_size); 0: full attention. Unset unless given.
CLI::Option* add_window(CLI::App& cli, std::optional<std::uint32_t>& target, const std::string& description);

// --devices D,D,...: the devices of a layer split in one process (vkf-run, vkf-server).
CLI::Option* add_device_list(CLI::App& cli, std::vector<std::string>& target);
// The window a run uses: --window where given, else the model's.
std::uint32_t run_window(const std::optional<std::uint32_t>& option, const ModelConfig& config);

// --limits SPEC, merged over earlier --limits (the environment's VKF_LIMITS is merged
// under it by the Context).
CLI::Option* add_limits(CLI::App& cli, LimitOverrides& target);

// Which device a program runs on and how it is constrained: --device D, --limits SPEC and,
// where a program runs long submissions, --timeout S.
struct DeviceOptions {
    std::optional<std::string> device;
    LimitOverrides limits;
    std::optional<std::uint32_t> timeout_s;
    ContextOptions context_options() const;
};
void add_device_options(CLI::App& cli, DeviceOptions& options, bool with_timeout = false);

}  // namespace vkf::app
