#pragma once
// Stop strings for streamed generation (vkf-run --stop): the text is printed as it comes,
// except a tail that could be the start of a stop string, which waits for the next piece.
// When a stop string completes, the text before it is the last that is printed. Works on
// complete UTF-8 (TextStream's output), so what it hands out is complete UTF-8 too.

#include <string>
#include <string_view>
#include <vector>

namespace vkf::text {

class StopStrings {
public:
    // Empty strings are ignored; no strings: everything passes through.
    explicit StopStrings(std::vector<std::string> stops);

    struct Piece {
        std::string text;      // safe to print now
        bool stopped = false;  // a stop string completed; `text` ends where it began
    };
    // After a stop, push() hands out nothing more.
    Piece push(std::string_view text);
    // The held-back tail at the end of generation (no stop string completed).
    std::string finish();
    // Whether there is any (non-empty) stop string to look for.
    bool active() const { return !stops_.empty(); }

private:
    std::vector<std::string> stops_;
    std::string held_;
    bool stopped_ = false;
};

}  // namespace vkf::text
