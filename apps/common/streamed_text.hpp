#pragma once
// Generated text printed as it is produced: what the token-to-text sink hands out (whole
// characters, stop strings held back until they are ruled out: host/text/token_text_sink.hpp),
// written and flushed to a stream at once so a reader sees each word as the model makes it.

#include "host/text/token_text_sink.hpp"
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
    const std::string& text() const { return sink_.text(); }

private:
    void print(const std::string& piece);
    text::TokenTextSink sink_;
    std::FILE* out_;
};

}  // namespace vkf::app
