#pragma once
// `vkf-bench run` (also `vkf-bench --quick`, `vkf-bench --suites ...`): the suites of the
// registry on one device, a text table on stdout as results arrive, progress on stderr,
// and a result file (--out) for `vkf-bench compare`.

#include "bench_results.hpp"
#include "bench_suites.hpp"

#include <functional>
#include <span>
#include <string>

namespace vkf::bench {

enum class ProgressMode { Auto, Bar, Lines, None };

// Shows which case runs and estimates the time left from the work done so far: a bar
// redrawn in place when stderr is a terminal (or --progress bar), else one line per case.
class Progress {
public:
    Progress(ProgressMode mode, std::size_t total);
    ~Progress();
    // Case i (0-based) begins; remaining_estimate_s: the expected seconds of the cases not
    // yet done, in the same scale as the finished ones' estimates.
    void begin(std::size_t i, const std::string& what, double remaining_estimate_s);
    // Case i ended; its estimate, to rescale the next ones by how long they really take.
    void end(double estimate_s);
    void done();
    static std::string duration_text(double seconds);

private:
    void draw(const std::string& what, double remaining_estimate_s);
    bool bar_ = false;
    bool lines_ = false;
    std::size_t total_ = 0;
    std::size_t current_ = 0;
    double started_ = 0.0;
    double case_started_ = 0.0;
    double estimated_done_ = 0.0; // sum of the finished cases' estimates
    double actual_done_ = 0.0;    // and of their real durations
};

int run_command(std::span<char* const> args, const std::string& command_line);

} // namespace vkf::bench
