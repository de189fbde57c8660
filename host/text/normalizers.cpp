#include "host/text/normalizers.hpp"

#include "host/text/byte_level.hpp"
#include "host/text/utf8.hpp"

#include <algorithm>

namespace vkf::text {
namespace {

class UnicodeNormalizer final : public Normalizer {
public:
    explicit UnicodeNormalizer(NormalForm form) : form_(form) {}
    std::string normalize(std::string_view text) const override { return text::normalize(text, form_); }

private:
    NormalForm form_;
};

class LowercaseNormalizer final : public Normalizer {
public:
    std::string normalize(std::string_view text) const override { return lowercase(text); }
};

class StripNormalizer final : public Normalizer {
public:
    StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
    std::string normalize(std::string_view text) const override {
        const std::size_t begin = left_ ? skip_white_space(text, 0) : 0;
        const std::size_t end = right_ ? std::max(begin, white_space_before(text, text.size())) : text.size();
        return std::string(text.substr(begin, end - begin));
    }

private:
    bool left_;
    bool right_;
};

class PrependNormalizer final : public Normalizer {
public:
    explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
    std::string normalize(std::string_view text) const override {
        return text.empty() ? std::string() : prefix_ + std::string(text);
    }

private:
    std::string prefix_;
};

class ReplaceNormalizer final : public Normalizer {
public:
    ReplaceNormalizer(Regex pattern, std::string content)
        : pattern_(std::move(pattern)), content_(std::move(content)) {}
    std::string normalize(std::string_view text) const override {
        std::vector<Regex::Match> matches;
        pattern_.find_all(text, matches);
        std::string out;
        std::size_t last = 0;
        for (const Regex::Match& m : matches) {
            out.append(text.substr(last, m.begin - last));
            out += content_;
            last = m.end;
        }
        out.append(text.substr(last));
        return out;
    }

private:
    Regex pattern_;
    std::string content_;
};

class ByteLevelNormalizer final : public Normalizer {
public:
    std::string normalize(std::string_view text) const override { return to_byte_level(text); }
};

class SequenceNormalizer final : public Normalizer {
public:
    explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> normalizers)
        : normalizers_(std::move(normalizers)) {}
    std::string normalize(std::string_view text) const override {
        std::string current(text);
        for (const auto& normalizer : normalizers_) {
            current = normalizer->normalize(current);
        }
        return current;
    }

private:
    std::vector<std::unique_ptr<Normalizer>> normalizers_;
};

}  // namespace

std::unique_ptr<Normalizer> make_unicode_normalizer(NormalForm form) {
    return std::make_unique<UnicodeNormalizer>(form);
}

std::unique_ptr<Normalizer> make_lowercase_normalizer() {
    return std::make_unique<LowercaseNormalizer>();
}

std::unique_ptr<Normalizer> make_strip_normalizer(bool left, bool right) {
    return std::make_unique<StripNormalizer>(left, right);
}

std::unique_ptr<Normalizer> make_prepend_normalizer(std::string prefix) {
    return std::make_unique<PrependNormalizer>(std::move(prefix));
}

std::unique_ptr<Normalizer> make_replace_normalizer(Regex pattern, std::string content) {
    return std::make_unique<ReplaceNormalizer>(std::move(pattern), std::move(content));
}

std::unique_ptr<Normalizer> make_byte_level_normalizer() {
    return std::make_unique<ByteLevelNormalizer>();
}

std::unique_ptr<Normalizer> make_sequence_normalizer(std::vector<std::unique_ptr<Normalizer>> normalizers) {
    return std::make_unique<SequenceNormalizer>(std::move(normalizers));
}

}  // namespace vkf::text
