#pragma once
// Regular expressions for the tokenizer: PCRE2 (8-bit library, UTF and UCP modes, JIT where the
// platform has it). tokenizer.json files hold patterns for Oniguruma, which Hugging Face's
// tokenizers compile them with; from_oniguruma rewrites the constructs whose meaning differs so
// that PCRE2 matches what Oniguruma matches:
//   \s \S     -> \p{White_Space} \P{White_Space} (PCRE2's \s also takes U+180E)
//   \w \W \b \B -> Unicode's word characters: Alphabetic, marks, Nd, Pc, Join_Control (PCRE2's
//                  \w is letters, numbers and '_')
//   \d \D     -> \p{Nd} \P{Nd};  \h \H -> hexadecimal digits (PCRE2's \h is horizontal space)
//   \uHHHH    -> \x{HHHH}
//   [a[bc]]   -> [abc] (Oniguruma's nested classes are unions; BLOOM's pre-tokenizer has one)
//   {,n}      -> {0,n};  (?m) -> (?s) (Ruby's m is PCRE2's s); ^ and $ match at line starts and
//                ends (PCRE2_MULTILINE), as in Ruby's syntax
// A negated class inside a class, a class intersection (&&) and \W or \H inside a class have no
// PCRE2 spelling here and are refused. Unicode versions may differ (PCRE2 10.42: Unicode 14).

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::text {

class Regex {
public:
    // A pattern in Oniguruma's syntax. `where` names it in errors ("tokenizer.json:
    // pre_tokenizer.pattern.Regex"): vkf::Error "<where>: cannot compile '<pattern>': <PCRE2's
    // message> at offset N".
    static Regex from_oniguruma(std::string_view pattern, std::string_view where);
    // `text` matched literally.
    static Regex literal(std::string_view text, std::string_view where);
    // A pattern in PCRE2's own syntax (the ones written in this library).
    static Regex from_pcre2(std::string_view pattern, std::string_view where);

    struct Match {
        std::size_t begin;
        std::size_t end;
    };
    // Every match in `text` (valid UTF-8) from left to right, as Oniguruma's and Rust's find_iter
    // give them: each search starts where the last match ended, and an empty match right at the
    // end of the previous match is skipped (the search moves on by one character).
    void find_all(std::string_view text, std::vector<Match>& out) const;
    // Whether a match starts exactly at byte `pos` of `text`.
    bool matches_at(std::string_view text, std::size_t pos) const;

    // The pattern as given.
    const std::string& pattern() const;

private:
    struct Code;
    explicit Regex(std::shared_ptr<const Code> code);
    std::shared_ptr<const Code> code_;
};

// The rewriting from_oniguruma does (above). Throws vkf::Error "<problem> at offset N" for the
// constructs it refuses.
std::string oniguruma_to_pcre2(std::string_view pattern);

}  // namespace vkf::text
