#include "host/text/bert_normalizer.hpp"

#include "host/text/unicode.hpp"
#include "host/text/utf8.hpp"

namespace vkf::text {
namespace {

bool is_tab_or_line_end(char32_t c) {
    return c == '\t' || c == '\n' || c == '\r';
}

class BertNormalizer final : public Normalizer {
public:
    explicit BertNormalizer(BertNormalizerOptions options) : options_(options) {}

    std::string normalize(std::string_view text) const override {
        // Cleaning and the spaces around ideographs both map one character at a time, so one pass
        // does both.
        std::string out;
        out.reserve(text.size());
        for (std::size_t pos = 0; pos < text.size();) {
            const Utf8Char u = utf8_char(text, pos);
            pos += u.size;
            char32_t c = u.code_point;
            if (options_.clean_text) {
                if (c == 0 || c == 0xFFFD || (!is_tab_or_line_end(c) && is_control_format_or_private_use(c))) {
                    continue;
                }
                if (is_tab_or_line_end(c) || is_white_space(c)) {
                    c = ' ';
                }
            }
            if (options_.handle_chinese_chars && is_bert_chinese_char(c)) {
                out += ' ';
                append_utf8(out, c);
                out += ' ';
            } else {
                append_utf8(out, c);
            }
        }
        if (options_.strip_accents) {
            const std::string decomposed = text::normalize(out, NormalForm::NFD);
            out.clear();
            for (std::size_t pos = 0; pos < decomposed.size();) {
                const Utf8Char u = utf8_char(decomposed, pos);
                if (!is_nonspacing_mark(u.code_point)) {
                    out.append(decomposed, pos, u.size);
                }
                pos += u.size;
            }
        }
        if (options_.lowercase) {
            out = lowercase(out);
        }
        return out;
    }

private:
    BertNormalizerOptions options_;
};

}  // namespace

bool is_bert_chinese_char(char32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

std::unique_ptr<Normalizer> make_bert_normalizer(BertNormalizerOptions options) {
    return std::make_unique<BertNormalizer>(options);
}

}  // namespace vkf::text
