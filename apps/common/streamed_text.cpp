#include "apps/common/streamed_text.hpp"

#include "apps/common/standard_streams.hpp"

#include <utility>

namespace vkf::app {

StreamedText::StreamedText(const text::Tokenizer& tokenizer, std::vector<std::string> stops, std::FILE* out)
    : sink_(&tokenizer, {.stops = std::move(stops)}), out_(out) {}

void StreamedText::print(const std::string& piece) {
    if (out_ != nullptr && !piece.empty()) {
        write_checked(piece, out_);  // a closed pipe or a full disk stops generation
    }
}

bool StreamedText::push(text::TokenId id) {
    print(sink_.push(id));
    return sink_.go_on();
}

void StreamedText::finish() {
    print(sink_.finish());
}

}  // namespace vkf::app
