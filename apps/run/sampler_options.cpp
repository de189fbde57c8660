#include "apps/run/sampler_options.hpp"

#include "apps/common/app_main.hpp"
#include "apps/common/options.hpp"

#include <charconv>
#include <string>

#include <fmt/format.h>

namespace vkf::run_cli {
namespace {

using namespace app;

// "ID=BIAS", e.g. 2=-100 (ban token 2) or 15=+2.5.
LogitBias parse_logit_bias(const std::string& text) {
    const std::size_t eq = text.find('=');
    LogitBias b;
    const char* end = text.data() + (eq == std::string::npos ? text.size() : eq);
    const auto [ptr, ec] = std::from_chars(text.data(), end, b.id);
    if (eq == std::string::npos || eq == 0 || ec != std::errc() || ptr != end) {
        throw UsageError(fmt::format("--logit-bias: \"{}\" is not ID=BIAS (a token id, '=', a number)", text));
    }
    b.bias = static_cast<float>(parse_number("--logit-bias", std::string_view(text).substr(eq + 1)));
    return b;
}

}  // namespace

void add_sampler_chain_options(CLI::App& cli, SamplingParams& s) {
    using namespace app;
    add_number(cli, "--min-p", "P", s.min_p, "keep tokens at least P times as likely as the best (default 0: off)");
    add_number(cli, "--typical", "P", s.typical_p, "locally typical sampling, mass P (default 1: off)");
    add_number(cli, "--repeat-penalty", "R", s.repetition_penalty,
               "divide a positive logit (multiply a negative one) of a token\n"
               "seen in the last --repeat-last-n tokens by R (default 1: off)");
    add_number(cli, "--presence-penalty", "A", s.presence_penalty,
               "subtract A from the logit of a token seen in the window (default 0)");
    add_number(cli, "--frequency-penalty", "A", s.frequency_penalty,
               "subtract A per occurrence in the window (default 0)");
    add_integer(cli, "--repeat-last-n", "N", s.penalty_last_n, 0,
                "the penalties' window: the last N tokens, prompt included (default 64)");
    add_parsed_option(cli, "--logit-bias", "ID=BIAS", "add BIAS to token ID's logit before sampling (repeatable)",
                      [&s](const std::string& text) { s.logit_bias.push_back(parse_logit_bias(text)); });
}

}  // namespace vkf::run_cli
