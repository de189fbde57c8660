#include "apps/common/options.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace vkf::app {

std::vector<std::string> split_list(std::string_view text) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (true) {
        const std::size_t comma = text.find(',', start);
        parts.emplace_back(
            text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (comma == std::string_view::npos) {
            return parts;
        }
        start = comma + 1;
    }
}

std::string alternatives(const std::vector<std::string>& words) {
    std::string text;
    for (std::size_t i = 0; i < words.size(); ++i) {
        text += i == 0 ? "" : (i + 1 == words.size() ? " or " : ", ");
        text += words[i];
    }
    return text;
}

std::vector<std::uint32_t> parse_counts(std::string_view option, std::string_view text, std::uint32_t min) {
    std::vector<std::uint32_t> values;
    for (const std::string& part : split_list(text)) {
        values.push_back(parse_integer<std::uint32_t>(option, part, min));
    }
    return values;
}

double parse_number(std::string_view option, std::string_view text) {
    const std::string copy(text);
    char* end = nullptr;
    const double value = std::strtod(copy.c_str(), &end);
    if (copy.empty() || end != copy.c_str() + copy.size() || !std::isfinite(value)) {
        throw UsageError(std::string(option) + " needs a finite number, not '" + copy + "'");
    }
    return value;
}

double parse_positive(std::string_view option, std::string_view text) {
    double value = 0.0;
    try {
        value = parse_number(option, text);
    } catch (const UsageError&) {
        value = 0.0;  // reported below with the positive wording
    }
    if (!(value > 0.0)) {
        throw UsageError(std::string(option) + " needs a positive number, not '" + std::string(text) + "'");
    }
    return value;
}

std::string parse_choice(std::string_view option, std::string_view text, const std::vector<std::string>& allowed) {
    for (const std::string& a : allowed) {
        if (text == a) {
            return a;
        }
    }
    throw UsageError(std::string(option) + " is " + alternatives(allowed) + ", not '" + std::string(text) + "'");
}

std::vector<std::string> parse_words(std::string_view option, std::string_view text,
                                     const std::vector<std::string>& allowed) {
    std::vector<std::string> words;
    for (const std::string& part : split_list(text)) {
        words.push_back(parse_choice(option, part, allowed));
    }
    return words;
}

std::uint64_t parse_size(std::string_view option, std::string_view text) {
    const std::optional<std::uint64_t> bytes = parse_byte_size(text);
    if (!bytes) {
        throw UsageError(std::string(option) + " needs a size such as 512M or 2G, not '" + std::string(text) + "'");
    }
    return *bytes;
}

LimitOverrides parse_limits(std::string_view option, std::string_view text, const LimitOverrides& so_far) {
    try {
        return so_far.merged_with(LimitOverrides::parse(text));
    } catch (const Error& e) {
        throw UsageError(std::string(option) + ": " + e.what());
    }
}

CLI::Option* add_parsed_option(CLI::App& cli, const std::string& name, const std::string& value_name,
                               const std::string& description, std::function<void(const std::string&)> parse) {
    // trigger_on_parse: the callback sees every occurrence, which --limits needs to merge.
    return cli.add_option_function<std::string>(name, std::move(parse), description)
        ->trigger_on_parse()
        ->type_name(value_name)
        ->option_text(value_name);
}

CLI::Option* add_weight_format(CLI::App& cli, std::optional<WeightFormat>& target, const std::string& description) {
    std::vector<std::pair<std::string, WeightFormat>> choices;
    for (const char* name : {"f32", "f16", "q8_0", "q4_0"}) {
        choices.emplace_back(name, *parse_weight_format(name));
    }
    return add_choice(cli, "--weights", target, std::move(choices), description);
}

CLI::Option* add_window(CLI::App& cli, std::optional<std::uint32_t>& target, const std::string& description) {
    return add_parsed_option(cli, "--window", "W", description, [&target](const std::string& text) {
        // The kernels compare positions as 32-bit signed integers (kMaxAttentionWindow).
        const auto w = parse_integer<std::uint32_t>("--window", text, 0);
        if (w > 0x3fffffffu) {
            throw UsageError("--window: " + text + " is over the largest window, 1073741823");
        }
        target = w;
    });
}

CLI::Option* add_device_list(CLI::App& cli, std::vector<std::string>& target) {
    return add_parsed_option(cli, "--devices", "D,D,...",
                             "split the model by layers over these devices (indices or\n"
                             "name substrings; one device twice: two contexts on it): each\n"
                             "holds a contiguous range of layers and their KV cache, the\n"
                             "first the embedding, the last the head; several sequences\n"
                             "(--prompt-file, a server's requests) go down them as a pipeline",
                             [&target](const std::string& text) {
                                 target.clear();
                                 std::size_t start = 0;
                                 while (true) {
                                     const std::size_t comma = text.find(',', start);
                                     target.push_back(text.substr(start, comma - start));
                                     if (target.back().empty()) {
                                         throw UsageError("--devices '" + text + "': an empty device in the list");
                                     }
                                     if (comma == std::string::npos) {
                                         break;
                                     }
                                     start = comma + 1;
                                 }
                             });
}

std::uint32_t run_window(const std::optional<std::uint32_t>& option, const ModelConfig& config) {
    return option.value_or(config.attention_window);
}

CLI::Option* add_limits(CLI::App& cli, LimitOverrides& target) {
    return add_parsed_option(cli, "--limits", "SPEC",
                             "lower the device's limits as a smaller device's: \"phone\",\n"
                             "\"spec_minimum\" (only what Vulkan guarantees: 16K shared memory,\n"
                             "128 invocations, 4 storage buffers, no optional features), or\n"
                             "comma-separated shared_memory=N, workgroup_invocations=N,\n"
                             "workgroup_size=XxYxZ, workgroup_count=N, storage_buffer_range=N,\n"
                             "push_constants=N, storage_buffers=N, compute_units=N,\n"
                             "no_fp16_storage, no_fp16_arithmetic, no_subgroup_ops,\n"
                             "no_subgroup_size_control, no_int64, no_integer_dot, no_unroll,\n"
                             "gpu_attention, gpu_matmul (planned as on a GPU), device_heap=N, host_heap=N (the device\n"
                             "memory vkformer may use; sizes accept K/M/G suffixes); merged\n"
                             "over VKF_LIMITS",
                             [&target](const std::string& text) { target = parse_limits("--limits", text, target); });
}

ContextOptions DeviceOptions::context_options() const {
    ContextOptions options{.device = device, .limits = limits};
    if (timeout_s) {
        options.timeout = std::chrono::milliseconds(std::int64_t{*timeout_s} * 1000);
    }
    return options;
}

void add_device_options(CLI::App& cli, DeviceOptions& options, bool with_timeout) {
    add_text(cli, "--device", "D", options.device,
             "device index or name substring (default: VKF_DEVICE, else the best)");
    add_limits(cli, options.limits);
    if (with_timeout) {
        // Whole seconds are plenty: the limit is there to catch a hung device. At most
        // kMaxTimeout, like VKF_TIMEOUT_MS (runtime/timeout.hpp).
        const std::uint32_t max_s = static_cast<std::uint32_t>(kMaxTimeout.count() / 1000);
        add_parsed_option(cli, "--timeout", "S",
                          "seconds one submission may take before the device counts as hung, 1 to " +
                              fmt::to_string(max_s) + "\n(default VKF_TIMEOUT_MS, else 120; 600 on CPU drivers)",
                          [&options, max_s](const std::string& text) {
                              const auto s = parse_integer<std::uint32_t>("--timeout", text, 1u);
                              if (s > max_s) {
                                  throw UsageError("--timeout needs a whole number of seconds from 1 to " +
                                                   fmt::to_string(max_s) + ", not '" + text + "'");
                              }
                              options.timeout_s = s;
                          });
    }
}

}  // namespace vkf::app
