#pragma once
// Progress of one long piece of work on stderr: a line redrawn in place on a terminal,
// a plain line per quarter of the work in a log (so CI logs stay short).

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

}  // namespace vkf::app
