#include "host/text/split.hpp"

#include <algorithm>

namespace vkf::text {

std::optional<SplitBehavior> parse_split_behavior(std::string_view name) {
    if (name == "Removed") {
        return SplitBehavior::Removed;
    }
    if (name == "Isolated") {
        return SplitBehavior::Isolated;
    }
    if (name == "MergedWithPrevious") {
        return SplitBehavior::MergedWithPrevious;
    }
    if (name == "MergedWithNext") {
        return SplitBehavior::MergedWithNext;
    }
    if (name == "Contiguous") {
        return SplitBehavior::Contiguous;
    }
    return std::nullopt;
}

std::vector<Segment> regex_segments(const Regex& regex, std::string_view text) {
    std::vector<Regex::Match> matches;
    regex.find_all(text, matches);
    std::vector<Segment> segments;
    segments.reserve(2 * matches.size() + 1);
    std::size_t last = 0;
    for (const Regex::Match& m : matches) {
        if (last != m.begin) {
            segments.push_back({last, m.begin, false});
        }
        segments.push_back({m.begin, m.end, true});
        last = m.end;
    }
    if (last != text.size()) {
        segments.push_back({last, text.size(), false});
    }
    return segments;
}

void split_segments(std::string_view text, std::vector<Segment> segments, SplitBehavior behavior, bool invert,
                    std::vector<std::string>& out) {
    if (invert) {
        for (Segment& s : segments) {
            s.is_match = !s.is_match;
        }
    }
    // The pieces as [begin, end) ranges, and whether to drop each.
    struct Piece {
        std::size_t begin;
        std::size_t end;
        bool removed;
    };
    std::vector<Piece> pieces;
    pieces.reserve(segments.size());
    bool previous_match = false;
    switch (behavior) {
        case SplitBehavior::Removed:
            for (const Segment& s : segments) {
                pieces.push_back({s.begin, s.end, s.is_match});
            }
            break;
        case SplitBehavior::Isolated:
            for (const Segment& s : segments) {
                pieces.push_back({s.begin, s.end, false});
            }
            break;
        case SplitBehavior::Contiguous:
            // A segment joins the piece before it when both are matches or both are not.
            for (const Segment& s : segments) {
                if (s.is_match == previous_match && !pieces.empty()) {
                    pieces.back().end = s.end;
                } else {
                    pieces.push_back({s.begin, s.end, false});
                }
                previous_match = s.is_match;
            }
            break;
        case SplitBehavior::MergedWithPrevious:
            // The first of consecutive matches joins the piece before it.
            for (const Segment& s : segments) {
                if (s.is_match && !previous_match && !pieces.empty()) {
                    pieces.back().end = s.end;
                } else {
                    pieces.push_back({s.begin, s.end, false});
                }
                previous_match = s.is_match;
            }
            break;
        case SplitBehavior::MergedWithNext:
            // The same from the end: the last of consecutive matches joins the piece after it.
            for (auto s = segments.rbegin(); s != segments.rend(); ++s) {
                if (s->is_match && !previous_match && !pieces.empty()) {
                    pieces.back().begin = s->begin;
                } else {
                    pieces.push_back({s->begin, s->end, false});
                }
                previous_match = s->is_match;
            }
            std::reverse(pieces.begin(), pieces.end());
            break;
    }
    for (const Piece& p : pieces) {
        if (!p.removed && p.end > p.begin) {
            out.emplace_back(text.substr(p.begin, p.end - p.begin));
        }
    }
}

}  // namespace vkf::text
