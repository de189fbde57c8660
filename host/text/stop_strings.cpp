#include "host/text/stop_strings.hpp"

#include <algorithm>
#include <utility>

namespace vkf::text {

StopStrings::StopStrings(std::vector<std::string> stops) {
    for (std::string& s : stops) {
        if (!s.empty()) {
            stops_.push_back(std::move(s));
        }
    }
}

StopStrings::Piece StopStrings::push(std::string_view text) {
    if (stopped_) {
        return {};
    }
    held_ += text;
    // The earliest completed stop string wins.
    std::size_t cut = std::string::npos;
    for (const std::string& s : stops_) {
        cut = std::min(cut, held_.find(s));
    }
    if (cut != std::string::npos) {
        stopped_ = true;
        Piece piece{held_.substr(0, cut), true};
        held_.clear();
        return piece;
    }
    // Hold back the longest tail that a stop string begins with.
    std::size_t keep = 0;
    for (const std::string& s : stops_) {
        for (std::size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n) {
            if (std::string_view(held_).substr(held_.size() - n) == std::string_view(s).substr(0, n)) {
                keep = n;
                break;
            }
        }
    }
    Piece piece{held_.substr(0, held_.size() - keep), false};
    held_.erase(0, held_.size() - keep);
    return piece;
}

std::string StopStrings::finish() {
    if (stopped_) {
        return {};
    }
    return std::exchange(held_, {});
}

}  // namespace vkf::text
