#pragma once
// Progress of one long piece of work on stderr: a line redrawn in place on a terminal,
// a plain line per quarter of the work in a log (so CI logs stay short).

#include <cstddef>
#include <functional>
#include <string>

namespace vkf::app {

class ProgressLine {
public:
    explicit ProgressLine(bool enabled);
    // `fraction` of the work done (1 ends the line on a terminal); `text` describes it.
    void update(double fraction, const std::string& text);

private:
    bool enabled_;
    bool tty_;
    int last_quarter_ = -1;
};

// A progress callback for a prompt's forward pass (GenerationOptions::on_prefill): from
// the first call more than a second after this was made, "prefill: N of M tokens" on a
// ProgressLine, as generation has; nothing for a prompt that runs fast. VKF_PROGRESS_AFTER_MS
// (milliseconds, 0 and up) replaces the second, so that a test needs no slow prompt; any
// other value throws vkf::Error naming it.
std::function<void(std::size_t, std::size_t)> prefill_progress(bool enabled);

}  // namespace vkf::app
