#pragma once
// One generation's token ids turned into the text its user sees, as they come: the C API's token
// callback, vkf-server's streamed deltas and the programs' printed text all go through it, so
// that they agree on what is handed out when. Three rules hold for every piece:
//   - it is whole UTF-8 characters (a character whose bytes span tokens comes with its last one);
//   - a tail that could be the start of a stop string waits until the next token rules it out;
//   - when a stop string completes, the text before it is the last piece, and generation ends.
// A cancel flag, set from any thread, ends generation too. No Vulkan.

#include "host/text/stop_strings.hpp"
#include "host/text/tokenizer.hpp"

#include <atomic>
#include <optional>
#include <string>
#include <vector>

namespace vkf::text {

class TokenTextSink {
public:
    struct Options {
        std::vector<std::string> stops;             // stop strings (empty ones are ignored)
        const std::atomic<bool>* cancel = nullptr;  // the caller's flag, read by go_on()
    };
    // `tokenizer` null: ids only, no text (the C API without a tokenizer); stop strings then
    // cannot be matched and are refused (vkf::Error). The tokenizer and the flag must outlive
    // the sink.
    TokenTextSink(const Tokenizer* tokenizer, Options options);

    // The text that became safe to hand out with `id` (often empty); nothing once a stop string
    // completed. Throws vkf::Error for an id the tokenizer cannot decode.
    std::string push(TokenId id);
    // Whether generation should go on: no stop string completed and the cancel flag is not set
    // (read now, so a flag set during the caller's own handling of the piece counts).
    bool go_on();
    bool stopped() const { return stopped_; }      // a stop string completed
    bool cancelled() const { return cancelled_; }  // go_on() saw the cancel flag set
    // At the end of generation: what is still held back (an incomplete character as U+FFFD, a
    // tail that never became a stop string), less a stop string it completes; nothing after a
    // stop.
    std::string finish();
    // All the text handed out so far by push() and finish(): the final text, stop string excluded.
    const std::string& text() const { return text_; }

private:
    std::string hand_out(StopStrings::Piece piece);

    std::optional<TextStream> stream_;  // none without a tokenizer
    StopStrings stops_;
    const std::atomic<bool>* cancel_;
    std::string text_;
    bool stopped_ = false;
    bool cancelled_ = false;
};

}  // namespace vkf::text
