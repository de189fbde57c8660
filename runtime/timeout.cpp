#include "runtime/timeout.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <charconv>
#include <string>

namespace vkf {

namespace {

std::string range_text() {
    return "from 1 to " + fmt::to_string(kMaxTimeout.count());
}

}  // namespace

std::chrono::milliseconds parse_timeout_ms(std::string_view text, std::string_view source) {
    const std::string what = std::string(source) + "='" + std::string(text) + "'";
    // from_chars alone would take a leading '-' and stop at "10abc" or "1e9"; every
    // character must be a digit, and the value must fit before it is range-checked.
    const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (!digits || ec == std::errc::invalid_argument || end != text.data() + text.size()) {
        throw Error(what + " is not a whole number of milliseconds (digits only, " + range_text() + ")");
    }
    if (ec == std::errc::result_out_of_range || value == 0 || value > static_cast<std::uint64_t>(kMaxTimeout.count())) {
        throw Error(what + " is out of range: a timeout is " + range_text() + " milliseconds");
    }
    return std::chrono::milliseconds(static_cast<std::int64_t>(value));
}

void check_timeout(std::chrono::milliseconds timeout, std::string_view source) {
    if (timeout.count() < 1 || timeout > kMaxTimeout) {
        throw Error(std::string(source) + " of " + fmt::to_string(timeout.count()) +
                    " ms is out of range: a timeout is " + range_text() + " milliseconds");
    }
}

std::uint64_t timeout_nanoseconds(std::chrono::milliseconds timeout) {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count());
}

}  // namespace vkf
