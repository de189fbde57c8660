#include "apps/common/progress_line.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>

namespace vkf::app {

ProgressLine::ProgressLine(bool enabled) : enabled_(enabled), tty_(::isatty(2) != 0) {}

void ProgressLine::update(double fraction, const std::string& text) {
    if (!enabled_) {
        return;
    }
    const bool done = fraction >= 1.0;
    if (tty_) {
        // \x1b[K clears what a longer previous text left at the end of the line.
        fmt::print(stderr, "\r{}\x1b[K{}", text, done ? "\n" : "");
        return;
    }
    const int quarter = static_cast<int>(fraction * 4.0);
    if (quarter > last_quarter_) {
        last_quarter_ = quarter;
        fmt::print(stderr, "{}\n", text);
    }
}

}  // namespace vkf::app
