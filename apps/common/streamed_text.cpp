#include "apps/common/streamed_text.hpp"

#include "apps/common/standard_streams.hpp"

#include <utility>

namespace vkf::app {

StreamedText::StreamedText(const text::Tokenizer& tokenizer, std::vector<std::string> stops, std::FILE* out)
    : stream_(tokenizer), stops_(std::move(stops)), out_(out) {}

void StreamedText::emit(const std::string& piece) {
    text_ += piece;
    if (out_ != nullptr && !piece.empty()) {
        write_checked(piece, out_);  // a closed pipe or a full disk stops generation
    }
}

bool StreamedText::push(text::TokenId id) {
    if (stopped_) {
        return false;
    }
    text::StopStrings::Piece piece = stops_.push(stream_.push(id));
    emit(piece.text);
    stopped_ = piece.stopped;
    return !stopped_;
}

void StreamedText::finish() {
    if (!stopped_) {
        emit(stops_.push(stream_.finish()).text);
        emit(stops_.finish());
    }
}

}  // namespace vkf::app
