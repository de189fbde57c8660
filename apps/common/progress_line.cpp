#include "apps/common/progress_line.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

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

namespace {

std::chrono::milliseconds progress_delay() {
    const char* text = std::getenv("VKF_PROGRESS_AFTER_MS");
    if (text == nullptr) {
        return std::chrono::seconds(1);
    }
    unsigned ms = 0;
    const char* end = text + std::strlen(text);
    const auto [ptr, ec] = std::from_chars(text, end, ms);
    if (*text == '\0' || ec != std::errc() || ptr != end || ms > 3'600'000) {
        throw Error(fmt::format("VKF_PROGRESS_AFTER_MS='{}': expected milliseconds, 0 to 3600000", text));
    }
    return std::chrono::milliseconds(ms);
}

}  // namespace

std::function<void(std::size_t, std::size_t)> prefill_progress(bool enabled) {
    if (!enabled) {
        return {};
    }
    const std::chrono::milliseconds delay = progress_delay();
    auto line = std::make_shared<ProgressLine>(true);
    const auto start = std::chrono::steady_clock::now();
    return [line, start, delay, shown = false](std::size_t done, std::size_t total) mutable {
        shown = shown || std::chrono::steady_clock::now() - start >= delay;
        if (shown && total > 0) {
            line->update(static_cast<double>(done) / static_cast<double>(total),
                         fmt::format("prefill: {} of {} tokens", done, total));
        }
    };
}

}  // namespace vkf::app
