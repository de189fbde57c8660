// The tokenizer's components one by one, on hand-written inputs: split behaviors, character
// classes, normalizers, the byte-level alphabet, the BPE merge loop and its options, and the
// added-token search (leftmost-longest, single_word, lstrip, rstrip, normalized).

#include "host/text/added_tokens.hpp"
#include "host/text/bpe_model.hpp"
#include "host/text/byte_level.hpp"
#include "host/text/decoders.hpp"
#include "host/text/normalizers.hpp"
#include "host/text/pre_tokenizers.hpp"
#include "host/text/split.hpp"
#include "host/text/unicode.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vkf::text {
namespace {

using Strings = std::vector<std::string>;
using Ids = std::vector<TokenId>;

Strings split(std::string_view text, const Regex& pattern, SplitBehavior behavior, bool invert = false) {
    Strings out;
    split_segments(text, regex_segments(pattern, text), behavior, invert, out);
    return out;
}

Strings pre_tokenize(const PreTokenizer& pre_tokenizer, std::string_view text) {
    Strings out;
    pre_tokenizer.pre_tokenize(text, out);
    return out;
}

TEST(TextSplit, EachBehavior) {
    const Regex dash = Regex::literal("-", "p");
    const std::string text = "x--y-x-";
    EXPECT_EQ(split(text, dash, SplitBehavior::Removed), (Strings{"x", "y", "x"}));
    EXPECT_EQ(split(text, dash, SplitBehavior::Isolated), (Strings{"x", "-", "-", "y", "-", "x", "-"}));
    EXPECT_EQ(split(text, dash, SplitBehavior::Contiguous), (Strings{"x", "--", "y", "-", "x", "-"}));
    // Only the first of consecutive delimiters joins a neighbour.
    EXPECT_EQ(split(text, dash, SplitBehavior::MergedWithPrevious), (Strings{"x-", "-", "y-", "x-"}));
    EXPECT_EQ(split(text, dash, SplitBehavior::MergedWithNext), (Strings{"x", "-", "-y", "-x", "-"}));
    // A leading delimiter has nothing before it to join.
    EXPECT_EQ(split("-a", dash, SplitBehavior::MergedWithPrevious), (Strings{"-", "a"}));
    EXPECT_EQ(split("", dash, SplitBehavior::Isolated), Strings{});
}

TEST(TextSplit, InvertSwapsMatchesAndTheRest) {
    const Regex letters = Regex::from_oniguruma(R"(\p{L}+)", "p");
    EXPECT_EQ(split("ab12cd!", letters, SplitBehavior::Removed, true), (Strings{"ab", "cd"}));
    EXPECT_EQ(split("ab12cd!", letters, SplitBehavior::Removed, false), (Strings{"12", "!"}));
    EXPECT_EQ(split("ab12cd!", letters, SplitBehavior::MergedWithPrevious, true), (Strings{"ab12", "cd!"}));
    EXPECT_EQ(split("ab12cd!", letters, SplitBehavior::MergedWithNext, true), (Strings{"ab", "12cd", "!"}));
}

TEST(TextSplit, BehaviorNames) {
    EXPECT_EQ(parse_split_behavior("MergedWithNext"), SplitBehavior::MergedWithNext);
    EXPECT_EQ(parse_split_behavior("Contiguous"), SplitBehavior::Contiguous);
    EXPECT_FALSE(parse_split_behavior("isolated").has_value());
}

TEST(TextCharacters, RustsDefinitions) {
    for (const char32_t c : {U'\t', U'\n', U'\r', U' ', U'\u0085', U'\u00a0', U'\u2028', U'\u3000'}) {
        EXPECT_TRUE(is_white_space(c)) << static_cast<unsigned>(c);
    }
    for (const char32_t c : {U'\u180e', U'\u200b', U'\ufeff', U'x'}) {
        EXPECT_FALSE(is_white_space(c)) << static_cast<unsigned>(c);
    }
    for (const char32_t c : {U'7', U'\u0663', U'\u00b2', U'\u2167', U'\u2460'}) {  // Nd, Nd, No, Nl, No
        EXPECT_TRUE(is_numeric(c)) << static_cast<unsigned>(c);
    }
    EXPECT_FALSE(is_numeric(U'x'));
    for (const char32_t c : {U'$', U'+', U'^', U'`', U'~', U'!', U'\u00bf', U'\u2014', U'\u300c', U'\u060c'}) {
        EXPECT_TRUE(is_punctuation(c)) << static_cast<unsigned>(c);
    }
    for (const char32_t c : {U'a', U' ', U'\u00a9', U'\u20ac'}) {  // a letter, a space, Sc and So symbols
        EXPECT_FALSE(is_punctuation(c)) << static_cast<unsigned>(c);
    }
}

TEST(TextNormalizers, UnicodeFormsAndCase) {
    EXPECT_EQ(make_unicode_normalizer(NormalForm::NFC)->normalize("e\u0301"), "\u00e9");
    EXPECT_EQ(make_unicode_normalizer(NormalForm::NFD)->normalize("\u00e9"), "e\u0301");
    EXPECT_EQ(make_unicode_normalizer(NormalForm::NFKC)->normalize("\ufb01 \u2460 \uff21\u2126"), "fi 1 A\u03a9");
    EXPECT_EQ(make_unicode_normalizer(NormalForm::NFKD)->normalize("\u00e9\u2460"), "e\u03011");
    // Character by character: İ becomes i + U+0307, and a final Σ is σ (no context).
    EXPECT_EQ(make_lowercase_normalizer()->normalize("AİΣ ΟΔΥΣΣΕΥΣ Ǆ"), "ai\u0307σ οδυσσευσ ǆ");
    EXPECT_EQ(make_unicode_normalizer(NormalForm::NFC)->normalize(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(TextNormalizers, StripPrependReplaceByteLevelSequence) {
    EXPECT_EQ(make_strip_normalizer(true, true)->normalize("\u3000 x y\t\u0085"), "x y");
    EXPECT_EQ(make_strip_normalizer(true, false)->normalize("  x  "), "x  ");
    EXPECT_EQ(make_strip_normalizer(false, true)->normalize("  x  "), "  x");
    EXPECT_EQ(make_strip_normalizer(true, true)->normalize("   "), "");
    EXPECT_EQ(make_prepend_normalizer("\u2581")->normalize("x"), "\u2581x");
    EXPECT_EQ(make_prepend_normalizer("\u2581")->normalize(""), "");
    EXPECT_EQ(make_replace_normalizer(Regex::literal(" ", "p"), "\u2581")->normalize(" a b"), "\u2581a\u2581b");
    EXPECT_EQ(make_replace_normalizer(Regex::from_oniguruma(R"(\s+)", "p"), " ")->normalize("a \t\n b"), "a b");
    EXPECT_EQ(make_byte_level_normalizer()->normalize("a b\n"), "a\u0120b\u010a");
    std::vector<std::unique_ptr<Normalizer>> steps;
    steps.push_back(make_unicode_normalizer(NormalForm::NFKC));
    steps.push_back(make_lowercase_normalizer());
    EXPECT_EQ(make_sequence_normalizer(std::move(steps))->normalize("\uff28ELLO"), "hello");
}

TEST(TextByteLevel, EveryByteHasOneCharacter) {
    std::string all;
    for (int b = 0; b < 256; ++b) {
        all += static_cast<char>(b);
    }
    const std::string chars = to_byte_level(all);
    EXPECT_EQ(from_byte_level(chars), all);
    EXPECT_EQ(byte_level_char(' '), "\u0120");   // Ġ
    EXPECT_EQ(byte_level_char('\n'), "\u010a");  // Ċ
    EXPECT_EQ(byte_level_char(0x7F), "\u0121");
    EXPECT_EQ(byte_level_char(0xAD), "\u0143");  // the last of the 68 moved bytes
    EXPECT_EQ(byte_level_char('a'), "a");
    EXPECT_EQ(byte_level_char(0xE9), "\u00e9");
    EXPECT_FALSE(from_byte_level("a\u0144").has_value());  // past the alphabet
    EXPECT_FALSE(from_byte_level("\u00ad").has_value());   // the soft hyphen is written as U+0143
}

// a b c ab bc abc, and merges (b, c), (a, b), (a, bc): the lowest rank goes first.
BpeModel small_model(std::vector<std::string> extra = {}) {
    std::vector<std::string> tokens = {"<unk>", "a", "b", "c", "ab", "bc", "abc"};
    tokens.insert(tokens.end(), extra.begin(), extra.end());
    BpeModel model(std::move(tokens));
    model.add_merge(2, 3, 5);  // b c -> bc, rank 0
    model.add_merge(1, 2, 4);  // a b -> ab, rank 1
    model.add_merge(1, 5, 6);  // a bc -> abc, rank 2
    return model;
}

Ids tokenize(const BpeModel& model, std::string_view piece) {
    Ids ids;
    model.tokenize(piece, ids);
    return ids;
}

TEST(TextBpe, LowestRankFirstThenLeftmost) {
    const BpeModel model = small_model();
    EXPECT_EQ(tokenize(model, "abc"), (Ids{6}));  // bc first, then a + bc
    EXPECT_EQ(tokenize(model, "abab"), (Ids{4, 4}));
    EXPECT_EQ(tokenize(model, "abcbc"), (Ids{6, 5}));
    EXPECT_EQ(tokenize(model, "cab"), (Ids{3, 4}));
    EXPECT_EQ(tokenize(model, "abc"), (Ids{6}));  // from the cache this time
    EXPECT_EQ(model.find("bc"), 5u);
    EXPECT_FALSE(model.find("ca").has_value());
    // Without unk, an unknown character is dropped, as in Hugging Face: a and b meet and merge.
    EXPECT_EQ(tokenize(model, "axb"), (Ids{4}));
}

BpeModel with_options(BpeOptions options) {
    BpeModel model = small_model({"<0x78>", "<0xC3>"});  // 7, 8: x, and é's first byte
    model.set_options(std::move(options));
    return model;
}

TEST(TextBpe, UnknownCharactersAndByteFallback) {
    EXPECT_EQ(tokenize(with_options({.unk = 0}), "xyb"), (Ids{0, 0, 2}));
    EXPECT_EQ(tokenize(with_options({.unk = 0, .fuse_unk = true}), "ayyzb"), (Ids{1, 0, 2}));
    const BpeModel fallback = with_options({.unk = 0, .byte_fallback = true});
    EXPECT_EQ(tokenize(fallback, "axb"), (Ids{1, 7, 2}));
    // é is C3 A9 and <0xA9> is missing: unk.
    EXPECT_EQ(tokenize(fallback, "a\u00e9"), (Ids{1, 0}));
}

TEST(TextBpe, AffixesAndIgnoreMerges) {
    BpeModel prefixed({"a", "##b", "##c", "ab", "abc", "b"});
    prefixed.add_merge(0, 1, 3);  // a ##b -> ab
    prefixed.add_merge(3, 2, 4);  // ab ##c -> abc
    prefixed.set_options({.continuing_subword_prefix = "##"});
    EXPECT_EQ(tokenize(prefixed, "abc"), (Ids{4}));
    EXPECT_EQ(tokenize(prefixed, "ba"), (Ids{5}));  // "##a" is unknown: dropped

    BpeModel suffixed({"a", "b</w>", "ab</w>", "b"});
    suffixed.add_merge(0, 1, 2);
    suffixed.set_options({.end_of_word_suffix = "</w>"});
    EXPECT_EQ(tokenize(suffixed, "ab"), (Ids{2}));
    EXPECT_EQ(tokenize(suffixed, "b"), (Ids{1}));

    // "ca" is a token but no merge makes it.
    EXPECT_EQ(tokenize(small_model({"ca"}), "ca"), (Ids{3, 1}));
    BpeModel whole = small_model({"ca"});
    whole.set_options({.ignore_merges = true});
    EXPECT_EQ(tokenize(whole, "ca"), (Ids{7}));
}

TEST(TextBpe, ALaterRepeatOfAMergeTakesItsRank) {
    BpeModel model({"a", "b", "c", "ab", "bc"});
    model.add_merge(0, 1, 3);  // a b, rank 0
    model.add_merge(1, 2, 4);  // b c, rank 1
    model.add_merge(0, 1, 3);  // a b again: rank 2
    EXPECT_EQ(tokenize(model, "abc"), (Ids{0, 4}));
}

// Added tokens: one of each option, searched as Hugging Face's AddedVocabulary does.
struct Found {
    std::string text;
    std::optional<TokenId> id;
    bool operator==(const Found&) const = default;
};

std::vector<Found> find(const AddedVocabulary& added, std::string_view text, bool normalized) {
    std::vector<Found> out;
    for (const AddedVocabulary::Stretch& s : added.split(text, normalized)) {
        out.push_back({std::string(text.substr(s.begin, s.end - s.begin)), s.id});
    }
    return out;
}

void PrintTo(const Found& f, std::ostream* os) {
    *os << "{\"" << f.text << "\", " << (f.id ? std::to_string(*f.id) : "none") << "}";
}

TEST(TextAddedTokens, LeftmostLongestAndOptions) {
    const auto lowercase = make_lowercase_normalizer();
    const AddedVocabulary added(
        {
            {.content = "<s>", .id = 10, .normalized = false, .special = true},
            {.content = "<s>x", .id = 11, .normalized = false},
            {.content = "[L]", .id = 12, .lstrip = true, .normalized = false},
            {.content = "[R]", .id = 13, .rstrip = true, .normalized = false},
            {.content = "cat", .id = 14, .single_word = true, .normalized = false},
            {.content = "Dog", .id = 15, .normalized = true},
        },
        lowercase.get());
    const auto none = std::nullopt;
    EXPECT_EQ(find(added, "a<s>xb<s>", false),
              (std::vector<Found>{{"a", none}, {"<s>x", 11}, {"b", none}, {"<s>", 10}}));
    EXPECT_EQ(find(added, "a  [L] b", false), (std::vector<Found>{{"a", none}, {"  [L]", 12}, {" b", none}}));
    EXPECT_EQ(find(added, "a [R] \t\u3000b", false),
              (std::vector<Found>{{"a ", none}, {"[R] \t\u3000", 13}, {"b", none}}));
    // Spaces a match took are not taken again by an lstrip match.
    EXPECT_EQ(find(added, "[R]  [L]", false), (std::vector<Found>{{"[R]  ", 13}, {"[L]", 12}}));
    // single_word: no word character (letters, marks, digits, '_') next to it.
    EXPECT_EQ(find(added, "cat cats bobcat cat_ cat. (cat) cat\u0301 cat", false),
              (std::vector<Found>{{"cat", 14},
                                  {" cats bobcat cat_ ", none},
                                  {"cat", 14},
                                  {". (", none},
                                  {"cat", 14},
                                  {") cat\u0301 ", none},
                                  {"cat", 14}}));
    // Normalized tokens match the normalized text, as their normalized content.
    EXPECT_EQ(find(added, "a dog", true), (std::vector<Found>{{"a ", none}, {"dog", 15}}));
    EXPECT_EQ(find(added, "a Dog", true), (std::vector<Found>{{"a Dog", none}}));
    EXPECT_EQ(find(added, "a dog", false), (std::vector<Found>{{"a dog", none}}));
    EXPECT_TRUE(find(added, "", false).empty());
}

TEST(TextPreTokenizers, DigitsPunctuationWhitespace) {
    EXPECT_EQ(pre_tokenize(*make_digits_pre_tokenizer(true), "a12\u0663\u00b2b"),
              (Strings{"a", "1", "2", "\u0663", "\u00b2", "b"}));
    EXPECT_EQ(pre_tokenize(*make_digits_pre_tokenizer(false), "a12\u0663\u00b2b3"),
              (Strings{"a", "12\u0663\u00b2", "b", "3"}));
    EXPECT_EQ(pre_tokenize(*make_punctuation_pre_tokenizer(SplitBehavior::Isolated), "a,b!?c$"),
              (Strings{"a", ",", "b", "!", "?", "c", "$"}));
    EXPECT_EQ(pre_tokenize(*make_punctuation_pre_tokenizer(SplitBehavior::Contiguous), "a,b!?c$"),
              (Strings{"a", ",", "b", "!?", "c", "$"}));
    EXPECT_EQ(pre_tokenize(*make_whitespace_pre_tokenizer(), "Hey, caf\u00e9 e\u0301t\u00e9!? \u2167x _y"),
              (Strings{"Hey", ",", "caf\u00e9", "e\u0301t\u00e9", "!?", "\u2167x", "_y"}));
    EXPECT_EQ(pre_tokenize(*make_whitespace_split_pre_tokenizer(), " a,b\u3000c\u0085d "), (Strings{"a,b", "c", "d"}));
}

TEST(TextPreTokenizers, ByteLevelAndSequence) {
    EXPECT_EQ(pre_tokenize(*make_byte_level_pre_tokenizer(false, true), "Hi  there\n"),
              (Strings{"Hi", "\u0120", "\u0120there", "\u010a"}));
    EXPECT_EQ(pre_tokenize(*make_byte_level_pre_tokenizer(true, true), "Hi"), (Strings{"\u0120Hi"}));
    EXPECT_EQ(pre_tokenize(*make_byte_level_pre_tokenizer(true, true), " Hi"), (Strings{"\u0120Hi"}));
    EXPECT_EQ(pre_tokenize(*make_byte_level_pre_tokenizer(false, false), "a b\u00e9"),
              (Strings{"a\u0120b\u00c3\u00a9"}));
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    steps.push_back(make_digits_pre_tokenizer(true));
    steps.push_back(make_byte_level_pre_tokenizer(true, true));
    EXPECT_EQ(pre_tokenize(*make_sequence_pre_tokenizer(std::move(steps)), "ab12"),
              (Strings{"\u0120ab", "\u01201", "\u01202"}));
}

Strings decode_chain(const Decoder& decoder, Strings tokens) {
    decoder.decode_chain(tokens);
    return tokens;
}

TEST(TextDecoders, EachAlone) {
    // Characters outside the byte-level alphabet leave a token as it is.
    EXPECT_EQ(decode_chain(*make_byte_level_decoder(), {"Hello", "\u0120world", "\u010a", "<s>", "a b"}),
              (Strings{"Hello world\n<s>a b"}));
    EXPECT_EQ(decode_chain(*make_byte_level_decoder(), {"\u00e6", "\u0139"}), (Strings{"\xE6\x97"}));  // bytes
    EXPECT_EQ(decode_chain(*make_replace_decoder("\u2581", " "), {"\u2581a\u2581", "b"}), (Strings{" a ", "b"}));
    EXPECT_EQ(decode_chain(*make_strip_decoder(" ", 1, 2), {"  a   ", " ", "b"}), (Strings{" a ", "", "b"}));
    EXPECT_EQ(decode_chain(*make_strip_decoder("\u2581", 0, 1), {"x\u2581\u2581"}), (Strings{"x\u2581"}));
    EXPECT_EQ(decode_chain(*make_fuse_decoder(), {"a", "b", "c"}), (Strings{"abc"}));
    EXPECT_EQ(decode_chain(*make_fuse_decoder(), {}), (Strings{""}));
    std::vector<std::unique_ptr<Decoder>> steps;
    steps.push_back(make_replace_decoder("\u2581", " "));
    steps.push_back(make_fuse_decoder());
    steps.push_back(make_strip_decoder(" ", 1, 0));
    EXPECT_EQ(decode_chain(*make_sequence_decoder(std::move(steps)), {"\u2581Hi", "\u2581there"}),
              (Strings{"Hi there"}));
}

}  // namespace
}  // namespace vkf::text
