#pragma once
// Generated text printed as it is produced: token ids decoded UTF-8-safely (TextStream),
// stop strings held back until they are ruled out (StopStrings), written and flushed to a
// stream at once so a reader sees each word as the model makes it.

#include "host/text/stop_strings.hpp"
#include "host/text/tokenizer.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace vkf::app {

class StreamedText {
public:
    // `out` null: nothing is printed, the text is only collected (for --json).
    StreamedText(const text::Tokenizer& tokenizer, std::vector<std::string> stops, std::FILE* out);
    // Decodes and prints `id`; false when a stop string completed (generation should end).
    bool push(text::TokenId id);
    // Prints what is still held back; call once at the end of a turn.
    void finish();
    // All the text printed so far (the stop string excluded).
    const std::string& text() const { return text_; }

private:
    void emit(const std::string& piece);
    text::TextStream stream_;
    text::StopStrings stops_;
    std::FILE* out_;
    std::string text_;
    bool stopped_ = false;
};

}  // namespace vkf::app
