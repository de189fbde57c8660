#include "apps/common/streamed_text.hpp"

#include <utility>

namespace vkf::app {

StreamedText::StreamedText(const text::Tokenizer& tokenizer, std::vector<std::string> stops, std::FILE* out)
    : stream_(tokenizer), stops_(std::move(stops)), out_(out) {}

void StreamedText::emit(const std::string& piece) {
    text_ += piece;
    if (out_ != nullptr && !piece.empty()) {
        std::fwrite(piece.data(), 1, piece.size(), out_);
        std::fflush(out_);
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
