#pragma once
// Progress of a benchmark run on stderr: which case runs, and the time left estimated from
// the work done so far.

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace vkf::bench {

enum class ProgressMode { Auto, Bar, Lines, None };

// Shows which case runs and estimates the time left from the work done so far: a bar
// redrawn in place every second when stderr is a terminal (or --progress bar), else one
// line per case, so CI logs stay readable.
class Progress {
public:
    Progress(ProgressMode mode, std::size_t total);
    ~Progress();
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;
    // Case i (0-based) begins; remaining_estimate_s: the expected seconds of the cases not
    // yet done, this one included, in the same scale as the finished ones' estimates.
    void begin(std::size_t i, const std::string& what, double remaining_estimate_s);
    // The case ended; its estimate, to rescale the next ones by how long they really take.
    void end(double estimate_s);
    // Runs `print` (which writes to stdout) with the bar taken off the terminal line.
    void print_above(const std::function<void()>& print);
    void done();
    static std::string duration_text(double seconds);

private:
    void draw_locked();
    void tick();
    bool bar_ = false;
    bool lines_ = false;
    std::size_t total_ = 0;
    std::size_t current_ = 0;
    std::string what_;
    double remaining_estimate_s_ = 0.0;
    double started_ = 0.0;
    double case_started_ = 0.0;
    double estimated_done_ = 0.0;  // sum of the finished cases' estimates
    double actual_done_ = 0.0;     // and of their real durations
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;
    std::thread ticker_;  // redraws the bar while a long case runs
};

}  // namespace vkf::bench
