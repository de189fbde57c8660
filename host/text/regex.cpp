#include "host/text/regex.hpp"

#include "base/error.hpp"
#include "host/text/utf8.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>

#include <pcre2.h>

#include <optional>

namespace vkf::text {
namespace {

// Unicode's word characters (UTS #18 \w), which Oniguruma's and Rust's \w mean.
constexpr std::string_view kWordChars = R"(\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control})";

struct TranslationError {
    std::string problem;
    std::size_t offset;
};

// Rewrites one Oniguruma pattern for PCRE2 (see regex.hpp), a character at a time.
class OnigurumaTranslator {
public:
    explicit OnigurumaTranslator(std::string_view pattern) : in_(pattern) {}

    std::string run() {
        while (pos_ < in_.size()) {
            const char c = in_[pos_];
            if (c == '\\') {
                escape(false);
            } else if (c == '[') {
                ++pos_;
                out_ += '[';
                class_body(true);
                out_ += ']';
            } else if (c == '(' && in_.substr(pos_).starts_with("(?")) {
                group_options();
            } else if (c == '{' && in_.substr(pos_).starts_with("{,")) {
                out_ += "{0";
                ++pos_;
            } else {
                copy_char();
            }
        }
        return std::move(out_);
    }

private:
    void copy_char() {
        const std::size_t size = char_size(pos_);
        out_.append(in_.substr(pos_, size));
        pos_ += size;
    }

    std::size_t char_size(std::size_t pos) const {
        const Utf8Step step = utf8_step(in_, pos);
        return step.kind == Utf8Step::Kind::Char ? step.size : 1;
    }

    // \uHHHH -> \x{HHHH}; returns false when `\u` is not followed by four hexadecimal digits.
    bool unicode_escape() {
        const std::string_view digits = in_.substr(pos_ + 2, 4);
        if (digits.size() != 4 || digits.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos) {
            return false;
        }
        out_ += "\\x{" + std::string(digits) + "}";
        pos_ += 6;
        return true;
    }

    // A backslash and what follows it, outside or inside a character class.
    void escape(bool in_class) {
        if (pos_ + 1 >= in_.size()) {
            copy_char();  // PCRE2 reports the trailing backslash
            return;
        }
        if (in_[pos_ + 1] == 'u' && unicode_escape()) {
            return;
        }
        if (const std::optional<std::string> replacement = rewrite(in_[pos_ + 1], in_class)) {
            out_ += *replacement;
            pos_ += 2;
        } else {
            out_ += '\\';
            ++pos_;
            copy_char();
        }
    }

    // PCRE2's spelling of Oniguruma's \e where the two differ; nullopt where they agree (\b
    // inside a class is a backspace in both).
    std::optional<std::string> rewrite(char e, bool in_class) const {
        const std::string word(kWordChars);
        switch (e) {
            case 's':
                return R"(\p{White_Space})";
            case 'S':
                return R"(\P{White_Space})";
            case 'd':
                return R"(\p{Nd})";
            case 'D':
                return R"(\P{Nd})";
            case 'w':
                return in_class ? word : "[" + word + "]";
            case 'h':
                return in_class ? "0-9A-Fa-f" : "[0-9A-Fa-f]";
            case 'W':
            case 'H':
                if (in_class) {
                    throw TranslationError{std::string("\\") + e + " inside a character class is not supported", pos_};
                }
                return e == 'W' ? "[^" + word + "]" : "[^0-9A-Fa-f]";
            case 'b':
            case 'B':
                if (in_class) {
                    return std::nullopt;
                }
                return e == 'b' ? "(?:(?<=[" + word + "])(?![" + word + "])|(?<![" + word + "])(?=[" + word + "]))"
                                : "(?:(?<=[" + word + "])(?=[" + word + "])|(?<![" + word + "])(?![" + word + "]))";
            default:
                return std::nullopt;
        }
    }

    // After '[' (and, for a nested class, its '[' has been dropped): copies the members up to the
    // closing ']', which is consumed but not written.
    void class_body(bool outermost) {
        const std::size_t start = pos_ - 1;
        if (pos_ < in_.size() && in_[pos_] == '^') {
            if (!outermost) {
                throw TranslationError{"a negated class inside a character class is not supported", start};
            }
            out_ += '^';
            ++pos_;
        }
        if (pos_ < in_.size() && in_[pos_] == ']') {  // a leading ']' is a member
            out_ += "\\]";
            ++pos_;
        }
        while (pos_ < in_.size()) {
            const char c = in_[pos_];
            if (c == ']') {
                ++pos_;
                return;
            }
            if (c == '\\') {
                escape(true);
            } else if (c == '[' && in_.substr(pos_).starts_with("[:")) {
                const std::size_t close = in_.find(":]", pos_ + 2);
                const std::size_t end = close == std::string_view::npos ? in_.size() : close + 2;
                out_.append(in_.substr(pos_, end - pos_));
                pos_ = end;
            } else if (c == '[') {
                ++pos_;
                class_body(false);
            } else if (c == '&' && in_.substr(pos_).starts_with("&&")) {
                throw TranslationError{"a character class intersection (&&) is not supported", pos_};
            } else {
                copy_char();
            }
        }
        // Unterminated: PCRE2 reports it on the rewritten pattern.
    }

    // "(?imx-imx)" or "(?imx-imx:": Ruby's m (dot matches newline) is PCRE2's s.
    void group_options() {
        std::size_t end = pos_ + 2;
        while (end < in_.size() && (in_[end] == 'i' || in_[end] == 'm' || in_[end] == 'x' || in_[end] == '-')) {
            ++end;
        }
        if (end == pos_ + 2 || end >= in_.size() || (in_[end] != ':' && in_[end] != ')')) {
            out_ += "(?";
            pos_ += 2;
            return;
        }
        for (std::size_t i = pos_; i < end; ++i) {
            out_ += in_[i] == 'm' ? 's' : in_[i];
        }
        pos_ = end;
    }

    std::string_view in_;
    std::size_t pos_ = 0;
    std::string out_;
};

std::string pcre2_message(int code) {
    PCRE2_UCHAR buffer[256];
    const int length = pcre2_get_error_message(code, buffer, sizeof buffer);
    return length < 0 ? "PCRE2 error " + fmt::to_string(code) : std::string(reinterpret_cast<char*>(buffer));
}

}  // namespace

struct Regex::Code {
    std::string pattern;  // as given
    pcre2_code* code = nullptr;
    ~Code() { pcre2_code_free(code); }
};

namespace {

using CompileContext = std::unique_ptr<pcre2_compile_context, decltype(&pcre2_compile_context_free)>;
using MatchData = std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)>;

// Compiles `compiled`; messages quote `shown` (the pattern as the file has it) and, where the
// rewriting changed it, the rewritten pattern the offset counts in.
pcre2_code* compile(std::string_view compiled, std::string_view shown, std::uint32_t options, std::string_view where) {
    const CompileContext context(pcre2_compile_context_create(nullptr), &pcre2_compile_context_free);
    if (!context) {
        throw Error(std::string(where) + ": out of memory compiling a regular expression");
    }
    pcre2_set_newline(context.get(), PCRE2_NEWLINE_LF);
    pcre2_set_bsr(context.get(), PCRE2_BSR_UNICODE);
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(compiled.data()), compiled.size(), options, &error,
                                     &offset, context.get());
    if (code == nullptr) {
        std::string message = std::string(where) + ": cannot compile '" + std::string(shown) +
                              "': " + pcre2_message(error) + " at offset " + fmt::to_string(offset);
        if (compiled != shown) {
            message += " of its PCRE2 form '" + std::string(compiled) + "'";
        }
        throw Error(message);
    }
    // JIT is an optimization: where the platform has none, the interpreter matches the same.
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    return code;
}

constexpr std::uint32_t kPatternOptions = PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE;

}  // namespace

std::string oniguruma_to_pcre2(std::string_view pattern) {
    try {
        return OnigurumaTranslator(pattern).run();
    } catch (const TranslationError& e) {
        throw Error(e.problem + " at offset " + fmt::to_string(e.offset));
    }
}

Regex::Regex(std::shared_ptr<const Code> code) : code_(std::move(code)) {}

Regex Regex::from_oniguruma(std::string_view pattern, std::string_view where) {
    std::string translated;
    try {
        translated = OnigurumaTranslator(pattern).run();
    } catch (const TranslationError& e) {
        throw Error(std::string(where) + ": cannot compile '" + std::string(pattern) + "': " + e.problem +
                    " at offset " + fmt::to_string(e.offset));
    }
    auto code = std::make_shared<Code>();
    code->pattern = std::string(pattern);
    code->code = compile(translated, pattern, kPatternOptions, where);
    return Regex(std::move(code));
}

Regex Regex::literal(std::string_view text, std::string_view where) {
    auto code = std::make_shared<Code>();
    code->pattern = std::string(text);
    code->code = compile(text, text, PCRE2_UTF | PCRE2_LITERAL, where);
    return Regex(std::move(code));
}

Regex Regex::from_pcre2(std::string_view pattern, std::string_view where) {
    auto code = std::make_shared<Code>();
    code->pattern = std::string(pattern);
    code->code = compile(pattern, pattern, kPatternOptions, where);
    return Regex(std::move(code));
}

const std::string& Regex::pattern() const {
    return code_->pattern;
}

namespace {

// One pcre2_match; the interpreter takes over when a JIT stack is too small.
int match_once(const pcre2_code* code, std::string_view text, std::size_t start, std::uint32_t options,
               pcre2_match_data* data, const std::string& pattern) {
    const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    int rc = pcre2_match(code, subject, text.size(), start, options | PCRE2_NO_UTF_CHECK, data, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        rc = pcre2_match(code, subject, text.size(), start, options | PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, data, nullptr);
    }
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
        throw Error("regular expression '" + pattern + "': matching failed: " + pcre2_message(rc));
    }
    return rc;
}

}  // namespace

void Regex::find_all(std::string_view text, std::vector<Match>& out) const {
    const MatchData data(pcre2_match_data_create_from_pattern(code_->code, nullptr), &pcre2_match_data_free);
    if (!data) {
        throw Error("regular expression '" + code_->pattern + "': out of memory");
    }
    std::size_t search_from = 0;
    std::optional<std::size_t> last_match_end;
    while (search_from <= text.size()) {
        if (match_once(code_->code, text, search_from, 0, data.get(), code_->pattern) == PCRE2_ERROR_NOMATCH) {
            return;
        }
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
        const std::size_t begin = ovector[0];
        const std::size_t end = ovector[1];
        if (begin == end && last_match_end == end) {
            search_from += search_from < text.size() ? utf8_char(text, search_from).size : 1;
            continue;
        }
        out.push_back({begin, end});
        search_from = end;
        last_match_end = end;
    }
}

bool Regex::matches_at(std::string_view text, std::size_t pos) const {
    const MatchData data(pcre2_match_data_create_from_pattern(code_->code, nullptr), &pcre2_match_data_free);
    if (!data) {
        throw Error("regular expression '" + code_->pattern + "': out of memory");
    }
    return match_once(code_->code, text, pos, PCRE2_ANCHORED, data.get(), code_->pattern) >= 0;
}

}  // namespace vkf::text
