#pragma once
// How Hugging Face's tokenizers cut a piece of text (their Pattern and SplitDelimiterBehavior):
// a pattern divides the text into alternating non-matches and matches that cover it, and the
// behavior decides what happens to the matches (the delimiters).

#include "host/text/regex.hpp"
#include "host/text/utf8.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::text {

enum class SplitBehavior {
    Removed,             // delimiters dropped
    Isolated,            // each delimiter a piece of its own
    MergedWithPrevious,  // a delimiter joins the piece before it
    MergedWithNext,      // a delimiter joins the piece after it
    Contiguous,          // consecutive delimiters form one piece
};

// "Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous" (tokenizer.json's
// spelling); nullopt for anything else.
std::optional<SplitBehavior> parse_split_behavior(std::string_view name);

// A stretch of the text and whether the pattern matched it.
struct Segment {
    std::size_t begin;
    std::size_t end;
    bool is_match;
};

// The segments of `text` for a regular expression: the non-matches between the matches and the
// matches themselves, empty matches included.
std::vector<Segment> regex_segments(const Regex& regex, std::string_view text);

// The segments of `text` for a character test: every character for which `is_delimiter` holds is a
// match of its own.
template <class Predicate>
std::vector<Segment> char_segments(std::string_view text, Predicate is_delimiter);

// Applies `behavior` to `segments` of `text` (with `invert`, matches and non-matches trade places
// first) and appends the non-empty pieces to `out`.
void split_segments(std::string_view text, std::vector<Segment> segments, SplitBehavior behavior, bool invert,
                    std::vector<std::string>& out);

// --- implementation ---

template <class Predicate>
std::vector<Segment> char_segments(std::string_view text, Predicate is_delimiter) {
    std::vector<Segment> segments;
    std::size_t last = 0;
    for (std::size_t pos = 0; pos < text.size();) {
        const Utf8Char c = utf8_char(text, pos);
        if (is_delimiter(c.code_point)) {
            if (last < pos) {
                segments.push_back({last, pos, false});
            }
            segments.push_back({pos, pos + c.size, true});
            last = pos + c.size;
        }
        pos += c.size;
    }
    if (last < text.size()) {
        segments.push_back({last, text.size(), false});
    }
    return segments;
}

}  // namespace vkf::text
