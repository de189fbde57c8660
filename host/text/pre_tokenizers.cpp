#include "host/text/pre_tokenizers.hpp"

#include "host/text/byte_level.hpp"
#include "host/text/unicode.hpp"

namespace vkf::text {
namespace {

class ByteLevelPreTokenizer final : public PreTokenizer {
public:
    ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
        : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {}

    void pre_tokenize(std::string_view text, std::vector<std::string>& out) const override {
        std::string prefixed;
        if (add_prefix_space_ && !text.starts_with(' ')) {
            prefixed = " " + std::string(text);
            text = prefixed;
        }
        if (!use_regex_) {
            out.push_back(to_byte_level(text));
            return;
        }
        static const Regex gpt2 = Regex::from_oniguruma(kGpt2Pattern, "the ByteLevel pre-tokenizer");
        std::vector<std::string> pieces;
        split_segments(text, regex_segments(gpt2, text), SplitBehavior::Isolated, false, pieces);
        for (const std::string& piece : pieces) {
            out.push_back(to_byte_level(piece));
        }
    }

private:
    bool add_prefix_space_;
    bool use_regex_;
};

class SplitPreTokenizer final : public PreTokenizer {
public:
    SplitPreTokenizer(Regex pattern, SplitBehavior behavior, bool invert)
        : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
    void pre_tokenize(std::string_view text, std::vector<std::string>& out) const override {
        split_segments(text, regex_segments(pattern_, text), behavior_, invert_, out);
    }

private:
    Regex pattern_;
    SplitBehavior behavior_;
    bool invert_;
};

// Characters for which `Test` holds are the delimiters.
template <bool (*Test)(char32_t)>
class CharSplitPreTokenizer final : public PreTokenizer {
public:
    explicit CharSplitPreTokenizer(SplitBehavior behavior) : behavior_(behavior) {}
    void pre_tokenize(std::string_view text, std::vector<std::string>& out) const override {
        split_segments(text, char_segments(text, Test), behavior_, false, out);
    }

private:
    SplitBehavior behavior_;
};

class WhitespacePreTokenizer final : public PreTokenizer {
public:
    void pre_tokenize(std::string_view text, std::vector<std::string>& out) const override {
        // Rust's regex \w (what Hugging Face's pattern means) in PCRE2's syntax.
        static const Regex words = Regex::from_pcre2(
            R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]+|[^\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}\p{White_Space}]+)",
            "the Whitespace pre-tokenizer");
        split_segments(text, regex_segments(words, text), SplitBehavior::Removed, true, out);
    }
};

class BertPreTokenizer final : public PreTokenizer {
public:
    void pre_tokenize(std::string_view text, std::vector<std::string>& out) const override {
        std::vector<std::string> words;
        split_segments(text, char_segments(text, is_white_space), SplitBehavior::Removed, false, words);
        for (const std::string& word : words) {
            split_segments(word, char_segments(word, is_punctuation), SplitBehavior::Isolated, false, out);
        }
    }
};

class SequencePreTokenizer final : public PreTokenizer {
public:
    explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> pre_tokenizers)
        : pre_tokenizers_(std::move(pre_tokenizers)) {}
    void pre_tokenize(std::string_view text, std::vector<std::string>& out) const override {
        std::vector<std::string> pieces{std::string(text)};
        std::vector<std::string> next;
        for (const auto& pre_tokenizer : pre_tokenizers_) {
            next.clear();
            for (const std::string& piece : pieces) {
                pre_tokenizer->pre_tokenize(piece, next);
            }
            pieces.swap(next);
        }
        for (std::string& piece : pieces) {
            out.push_back(std::move(piece));
        }
    }

private:
    std::vector<std::unique_ptr<PreTokenizer>> pre_tokenizers_;
};

}  // namespace

std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex) {
    return std::make_unique<ByteLevelPreTokenizer>(add_prefix_space, use_regex);
}

std::unique_ptr<PreTokenizer> make_split_pre_tokenizer(Regex pattern, SplitBehavior behavior, bool invert) {
    return std::make_unique<SplitPreTokenizer>(std::move(pattern), behavior, invert);
}

std::unique_ptr<PreTokenizer> make_digits_pre_tokenizer(bool individual_digits) {
    return std::make_unique<CharSplitPreTokenizer<is_numeric>>(individual_digits ? SplitBehavior::Isolated
                                                                                 : SplitBehavior::Contiguous);
}

std::unique_ptr<PreTokenizer> make_punctuation_pre_tokenizer(SplitBehavior behavior) {
    return std::make_unique<CharSplitPreTokenizer<is_punctuation>>(behavior);
}

std::unique_ptr<PreTokenizer> make_whitespace_pre_tokenizer() {
    return std::make_unique<WhitespacePreTokenizer>();
}

std::unique_ptr<PreTokenizer> make_whitespace_split_pre_tokenizer() {
    return std::make_unique<CharSplitPreTokenizer<is_white_space>>(SplitBehavior::Removed);
}

std::unique_ptr<PreTokenizer> make_bert_pre_tokenizer() {
    return std::make_unique<BertPreTokenizer>();
}

std::unique_ptr<PreTokenizer> make_sequence_pre_tokenizer(std::vector<std::unique_ptr<PreTokenizer>> pre_tokenizers) {
    return std::make_unique<SequencePreTokenizer>(std::move(pre_tokenizers));
}

}  // namespace vkf::text
