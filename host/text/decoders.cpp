#include "host/text/decoders.hpp"

#include "host/text/byte_level.hpp"

#include <optional>
#include <string_view>

namespace vkf::text {
namespace {

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
            std::string out;
            std::size_t last = 0;
            for (std::size_t at = token.find(pattern_); at != std::string::npos; at = token.find(pattern_, last)) {
                out.append(token, last, at - last);
                out += content_;
                last = at + pattern_.size();
            }
            out.append(token, last);
            token = std::move(out);
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

std::unique_ptr<Decoder> make_sequence_decoder(std::vector<std::unique_ptr<Decoder>> decoders) {
    return std::make_unique<SequenceDecoder>(std::move(decoders));
}

}  // namespace vkf::text
