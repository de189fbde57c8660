#include "apps/bench/progress.hpp"

#include "base/format.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace vkf::bench {

namespace {

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Progress::Progress(ProgressMode mode, std::size_t total) : total_(total), started_(now_s()) {
    const bool tty = isatty(STDERR_FILENO) != 0;
    bar_ = mode == ProgressMode::Bar || (mode == ProgressMode::Auto && tty);
    lines_ = mode == ProgressMode::Lines || (mode == ProgressMode::Auto && !tty);
    if (bar_) {
        ticker_ = std::thread([this] { tick(); });
    }
}

Progress::~Progress() {
    done();
}

void Progress::tick() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
        wake_.wait_for(lock, std::chrono::seconds(1));
        if (!stop_ && !what_.empty()) {
            draw_locked();
        }
    }
}

std::string Progress::duration_text(double seconds) {
    const auto s = static_cast<long>(std::lround(std::max(0.0, seconds)));
    if (s >= 3600) {
        return fmt::format("{}h{:02}m", s / 3600, (s / 60) % 60);
    }
    if (s >= 60) {
        return fmt::format("{}m{:02}s", s / 60, s % 60);
    }
    return fmt::format("{}s", s);
}

void Progress::begin(std::size_t i, const std::string& what, double remaining_estimate_s) {
    const std::lock_guard lock(mutex_);
    current_ = i;
    what_ = what;
    remaining_estimate_s_ = remaining_estimate_s;
    case_started_ = now_s();
    draw_locked();
}

void Progress::end(double estimate_s) {
    const std::lock_guard lock(mutex_);
    estimated_done_ += estimate_s;
    actual_done_ += now_s() - case_started_;
    what_.clear();  // nothing to redraw until the next case begins
}

void Progress::print_above(const std::function<void()>& print) {
    const std::lock_guard lock(mutex_);
    if (bar_) {
        fmt::print(stderr, "\r\033[K");
    }
    print();
    std::fflush(stdout);
    if (bar_ && !what_.empty()) {
        draw_locked();
    }
}

void Progress::draw_locked() {
    if (!bar_ && !lines_) {
        return;
    }
    const double t = now_s();
    // Estimates are rescaled by how long the finished cases took against theirs; the
    // current case's time so far counts as done.
    std::string left = "time left unknown";
    if (estimated_done_ > 0.0 && actual_done_ > 0.0) {
        const double scale = actual_done_ / estimated_done_;
        left = fmt::format("about {} left",
                           duration_text(std::max(0.0, remaining_estimate_s_ * scale - (t - case_started_))));
    }
    if (lines_) {
        fmt::print(stderr, "vkf-bench: [{}/{}] {} elapsed, {}: {}\n", current_ + 1, total_, duration_text(t - started_),
                   left, what_);
        return;
    }
    constexpr std::size_t kWidth = 24;
    const std::size_t filled = kWidth * current_ / std::max<std::size_t>(total_, 1);
    std::string line = fmt::format("\r\033[K[{:#<{}}{:.<{}}] {}/{} {}, {}  {}", "", filled, "", kWidth - filled,
                                   current_ + 1, total_, duration_text(t - started_), left, what_);
    if (line.size() > 120) {  // one terminal line, or the carriage return cannot take it back
        line.resize(120);
    }
    fmt::print(stderr, "{}", line);
    std::fflush(stderr);
}

void Progress::done() {
    {
        const std::lock_guard lock(mutex_);
        if (stop_) {
            return;
        }
        stop_ = true;
    }
    wake_.notify_all();
    if (ticker_.joinable()) {
        ticker_.join();
    }
    if (bar_) {
        fmt::print(stderr, "\r\033[K");
    }
    if (bar_ || lines_) {
        fmt::print(stderr, "vkf-bench: {} in {}\n", count_text(total_, "case"), duration_text(now_s() - started_));
    }
}

}  // namespace vkf::bench
