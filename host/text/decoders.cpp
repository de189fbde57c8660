#include "host/text/decoders.hpp"

#include "host/text/byte_level.hpp"

#include <optional>
#include <string_view>
#include <utility>

namespace vkf::text {
namespace {

// Every occurrence of `pattern` (not empty) replaced by `content`, left to right.
std::string replace_all(std::string_view text, std::string_view pattern, std::string_view content) {
    std::string out;
    std::size_t last = 0;
    for (std::size_t at = text.find(pattern); at != std::string_view::npos; at = text.find(pattern, last)) {
        out.append(text, last, at - last);
        out += content;
        last = at + pattern.size();
    }
    out.append(text, last);
    return out;
}

class ByteLevelDecoder final : public Decoder {
public:
    void decode_chain(std::vector<std::string>& tokens) const override {
        std::string bytes;
        for (const std::string& token : tokens) {
            const std::optional<std::string> decoded = from_byte_level(token);
            bytes += decoded ? *decoded : token;
        }
        tokens.assign(1, std::move(bytes));
    }
};

class ReplaceDecoder final : public Decoder {
public:
    ReplaceDecoder(std::string pattern, std::string content)
        : pattern_(std::move(pattern)), content_(std::move(content)) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (std::string& token : tokens) {
            token = replace_all(token, pattern_, content_);
        }
    }

private:
    std::string pattern_;
    std::string content_;
};

class StripDecoder final : public Decoder {
public:
    StripDecoder(std::string content, std::size_t start, std::size_t stop)
        : content_(std::move(content)), start_(start), stop_(stop) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (std::string& token : tokens) {
            const std::string_view view(token);
            std::size_t begin = 0;
            for (std::size_t i = 0; i < start_ && view.substr(begin).starts_with(content_); ++i) {
                begin += content_.size();
            }
            std::size_t end = view.size();
            for (std::size_t i = 0;
                 i < stop_ && end >= begin + content_.size() && view.substr(begin, end - begin).ends_with(content_);
                 ++i) {
                end -= content_.size();
            }
            token = std::string(view.substr(begin, end - begin));
        }
    }

private:
    std::string content_;
    std::size_t start_;
    std::size_t stop_;
};

class FuseDecoder final : public Decoder {
public:
    void decode_chain(std::vector<std::string>& tokens) const override {
        std::string joined;
        for (const std::string& token : tokens) {
            joined += token;
        }
        tokens.assign(1, std::move(joined));
    }
};

class WordPieceDecoder final : public Decoder {
public:
    WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        // Hugging Face's list, in its order (each replacement sees the result of the ones before).
        static constexpr std::pair<std::string_view, std::string_view> kCleanup[] = {
            {" .", "."},   {" ?", "?"},           {" !", "!"},   {" ,", ","},     {" ' ", "'"},    {" n't", "n't"},
            {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
        };
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            std::string& token = tokens[i];
            if (i != 0) {
                if (token.starts_with(prefix_)) {
                    token.erase(0, prefix_.size());
                } else {
                    token.insert(0, 1, ' ');
                }
            }
            if (cleanup_) {
                for (const auto& [from, to] : kCleanup) {
                    token = replace_all(token, from, to);
                }
            }
        }
    }

private:
    std::string prefix_;
    bool cleanup_;
};

class SequenceDecoder final : public Decoder {
public:
    explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> decoders) : decoders_(std::move(decoders)) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (const auto& decoder : decoders_) {
            decoder->decode_chain(tokens);
        }
    }

private:
    std::vector<std::unique_ptr<Decoder>> decoders_;
};

}  // namespace

std::unique_ptr<Decoder> make_byte_level_decoder() {
    return std::make_unique<ByteLevelDecoder>();
}

std::unique_ptr<Decoder> make_replace_decoder(std::string pattern, std::string content) {
    return std::make_unique<ReplaceDecoder>(std::move(pattern), std::move(content));
}

std::unique_ptr<Decoder> make_strip_decoder(std::string content, std::size_t start, std::size_t stop) {
    return std::make_unique<StripDecoder>(std::move(content), start, stop);
}

std::unique_ptr<Decoder> make_fuse_decoder() {
    return std::make_unique<FuseDecoder>();
}

std::unique_ptr<Decoder> make_wordpiece_decoder(std::string prefix, bool cleanup) {
    return std::make_unique<WordPieceDecoder>(std::move(prefix), cleanup);
}

std::unique_ptr<Decoder> make_sequence_decoder(std::vector<std::unique_ptr<Decoder>> decoders) {
    return std::make_unique<SequenceDecoder>(std::move(decoders));
}

}  // namespace vkf::text
