#include "host/text/token_text_sink.hpp"

#include "base/error.hpp"

#include <utility>

namespace vkf::text {

TokenTextSink::TokenTextSink(const Tokenizer* tokenizer, Options options)
    : stops_(std::move(options.stops)), cancel_(options.cancel) {
    if (tokenizer != nullptr) {
        stream_.emplace(*tokenizer);
    } else if (stops_.active()) {
        throw Error("stop strings need a tokenizer: without one a generation has no text to match them in");
    }
}

std::string TokenTextSink::hand_out(StopStrings::Piece piece) {
    stopped_ = stopped_ || piece.stopped;
    text_ += piece.text;
    return std::move(piece.text);
}

std::string TokenTextSink::push(TokenId id) {
    if (stopped_ || !stream_) {
        return {};
    }
    return hand_out(stops_.push(stream_->push(id)));
}

bool TokenTextSink::go_on() {
    if (cancel_ != nullptr && cancel_->load()) {
        cancelled_ = true;
    }
    return !stopped_ && !cancelled_;
}

std::string TokenTextSink::finish() {
    if (stopped_ || !stream_) {
        return {};
    }
    std::string rest = hand_out(stops_.push(stream_->finish()));
    if (!stopped_) {
        const std::string tail = stops_.finish();
        text_ += tail;
        rest += tail;
    }
    return rest;
}

}  // namespace vkf::text
