// BERT's WordPiece tokenizer (data/bert_wordpiece.json, written by make_fixtures.py: a token's id
// is its index in WORDPIECE_VOCAB). Every expected id is derived by hand from Hugging Face's
// algorithm: BertNormalizer (clean, spaces around CJK ideographs, NFD without Mn, lowercase),
// BertPreTokenizer (White_Space dropped, punctuation alone), WordPiece (longest vocabulary match
// from the left, "##" after the first, no backtracking: a piece that cannot be covered is one
// [UNK]), then [CLS] $A [SEP].

#include "host/text/bert_normalizer.hpp"
#include "host/text/tokenizer.hpp"
#include "host/text/wordpiece_model.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

namespace vkf::text {
namespace {

using Ids = std::vector<TokenId>;
using namespace std::string_literals;

// WORDPIECE_VOCAB of make_fixtures.py.
constexpr TokenId kUnk = 1, kCls = 2, kSep = 3, kMask = 4;
constexpr TokenId kBang = 5, kComma = 6, kDot = 7, kQuestion = 8, kApostrophe = 9, kOpen = 10, kClose = 11;
constexpr TokenId kA = 14, kUn = 15, kHello = 16, kWorld = 17, kCafe = 18, kCafeAccent = 19, kNaive = 20;
constexpr TokenId kPlay = 21, kDon = 22, kT = 23, kAb = 24, kOSlash = 25, kZhong = 26, kGuo = 27;
constexpr TokenId kAff = 28, kAble = 29, kS = 30, kIng = 31, kEd = 32, kContA = 33, kContWorld = 34;
constexpr TokenId kContOSlash = 36;
constexpr std::size_t kVocabSize = 59;

std::string fixture_text() {
    std::ifstream in(std::string(VKF_TEXT_DATA) + "/bert_wordpiece.json");
    return std::string(std::istreambuf_iterator<char>(in), {});
}

const Tokenizer& bert() {
    static const Tokenizer tokenizer = Tokenizer::load(std::string(VKF_TEXT_DATA) + "/bert_wordpiece.json");
    return tokenizer;
}

// The fixture with one thing changed.
Tokenizer edited(const std::function<void(nlohmann::ordered_json&)>& edit) {
    nlohmann::ordered_json document = nlohmann::ordered_json::parse(fixture_text());
    edit(document);
    return Tokenizer::parse(document.dump(), "edited.json");
}

Ids encode(std::string_view text, bool add_special_tokens = false) {
    return bert().encode(text, add_special_tokens);
}

TEST(WordPiece, PunctuationAndCase) {
    // Lowercased, split at the space, "," and "!" alone.
    EXPECT_EQ(encode("Hello, World!"), (Ids{kHello, kComma, kWorld, kBang}));
    // Each punctuation character is a piece of its own, repeated ones too.
    EXPECT_EQ(encode("(HELLO)...?"), (Ids{kOpen, kHello, kClose, kDot, kDot, kDot, kQuestion}));
    // ¿ (Po) and — (Pd) are punctuation outside ASCII: alone, and not in the vocabulary.
    EXPECT_EQ(encode("\u00bfhello\u2014world?"), (Ids{kUnk, kHello, kUnk, kWorld, kQuestion}));
    // The apostrophe cuts "don't" into don ' t.
    EXPECT_EQ(encode("Don't"), (Ids{kDon, kApostrophe, kT}));
    EXPECT_EQ(encode(""), Ids{});
    EXPECT_EQ(encode(" \t\n "), Ids{});
}

TEST(WordPiece, GreedyLongestMatchFirst) {
    // "un" is the longest vocabulary prefix; then "##aff" wins over the shorter "##a"; then "##able".
    EXPECT_EQ(encode("unaffable"), (Ids{kUn, kAff, kAble}));
    EXPECT_EQ(encode("playing played plays"), (Ids{kPlay, kIng, kPlay, kEd, kPlay, kS}));
    EXPECT_EQ(encode("aaaa"), (Ids{kA, kContA, kContA, kContA}));
    EXPECT_EQ(encode("helloworld"), (Ids{kHello, kContWorld}));
    // "ab" is taken first and "##x" is not a token: the whole word is [UNK], although a + ##bx
    // would have covered it (no backtracking).
    EXPECT_EQ(encode("abx"), (Ids{kUnk}));
    // A word whose end is unknown is one [UNK], not world + [UNK]; other words are unaffected.
    EXPECT_EQ(encode("worldq hello"), (Ids{kUnk, kHello}));
    EXPECT_EQ(encode("xyz"), (Ids{kUnk}));
}

TEST(WordPiece, AccentsAreStrippedWhenLowercasing) {
    // strip_accents null follows lowercase (true): NFD, the Mn marks dropped, then lowercase.
    EXPECT_EQ(encode("Caf\u00e9 NA\u00cfVE"), (Ids{kCafe, kNaive}));
    EXPECT_EQ(encode("CAF\u00c9S"), (Ids{kCafe, kS}));
    EXPECT_EQ(encode("cafe\u0301"), (Ids{kCafe}));  // already decomposed
    // Ø and ø have no decomposition: lowercase only.
    EXPECT_EQ(encode("\u00d8\u00f8"), (Ids{kOSlash, kContOSlash}));
    // With strip_accents false the composed é stays and "café" is its own token.
    const Tokenizer keep = edited([](nlohmann::ordered_json& d) { d["normalizer"]["strip_accents"] = false; });
    EXPECT_EQ(keep.encode("Caf\u00e9", false), (Ids{kCafeAccent}));
    // Without lowercase (and so without stripping) "Hello" is not a token.
    const Tokenizer cased = edited([](nlohmann::ordered_json& d) { d["normalizer"]["lowercase"] = false; });
    EXPECT_EQ(cased.encode("Hello hello", false), (Ids{kUnk, kHello}));
}

TEST(WordPiece, ChineseCharactersAreWordsOfTheirOwn) {
    EXPECT_EQ(encode("\u4e2d\u56fd"), (Ids{kZhong, kGuo}));  // 中国
    EXPECT_EQ(encode("hello\u4e2d\u56fdworld"), (Ids{kHello, kZhong, kGuo, kWorld}));
    EXPECT_EQ(encode("\u4e2d\u6587"), (Ids{kZhong, kUnk}));  // 文 is a word, not in the vocabulary
    // Hiragana is not in the CJK blocks: the five characters stay one word, one [UNK].
    EXPECT_EQ(encode("\u3053\u3093\u306b\u3061\u306f"), (Ids{kUnk}));
    // Hugging Face's extension E range starts at U+2B920: U+2B820 stays inside the word "a𫠠"
    // (a, then no "##𫠠": one [UNK]), U+2B920 and extension B's U+20000 are split off.
    EXPECT_EQ(encode("a\U0002B820"), (Ids{kUnk}));
    EXPECT_EQ(encode("a\U0002B920"), (Ids{kA, kUnk}));
    EXPECT_EQ(encode("a\U00020000"), (Ids{kA, kUnk}));
    // Without handle_chinese_chars 中国 is one word: 中, then no "##国".
    const Tokenizer off = edited([](nlohmann::ordered_json& d) { d["normalizer"]["handle_chinese_chars"] = false; });
    EXPECT_EQ(off.encode("\u4e2d\u56fd", false), (Ids{kUnk}));
}

TEST(WordPiece, ControlCharactersAreCleaned) {
    // Removed: NUL, U+FFFD, Cc (VT and NEL too, though White_Space: removal comes first), Cf
    // (zero-width space), Co (private use). What is left joins: hello + ##world.
    for (const std::string& gap : {"\0"s, "\ufffd"s, "\v"s, "\u0085"s, "\u200b"s, "\ue000"s, "\x01"s}) {
        EXPECT_EQ(encode("hello" + gap + "world"), (Ids{kHello, kContWorld})) << testing::PrintToString(gap);
    }
    // Become spaces: tab, CR, LF, and every other White_Space (no-break space, line separator).
    for (const std::string& gap : {"\t"s, "\r\n"s, "\u00a0"s, "\u2028"s, "\u3000"s}) {
        EXPECT_EQ(encode("hello" + gap + "world"), (Ids{kHello, kWorld})) << testing::PrintToString(gap);
    }
    // Without clean_text the zero-width space stays inside the word: hello, then no "##\u200bworld".
    const Tokenizer raw = edited([](nlohmann::ordered_json& d) { d["normalizer"]["clean_text"] = false; });
    EXPECT_EQ(raw.encode("hello\u200bworld", false), (Ids{kUnk}));
}

TEST(WordPiece, WordsLongerThanMaxInputCharsAreUnknown) {
    // 100 characters is the limit (max_input_chars_per_word): a, then 99 ##a.
    Ids hundred(100, kContA);
    hundred[0] = kA;
    EXPECT_EQ(encode(std::string(100, 'a')), hundred);
    EXPECT_EQ(encode(std::string(101, 'a')), (Ids{kUnk}));
    EXPECT_EQ(encode(std::string(101, 'a') + " hello"), (Ids{kUnk, kHello}));
    // Characters are counted, not bytes: 60 ø are 120 bytes.
    std::string sixty;
    Ids sixty_ids(60, kContOSlash);
    sixty_ids[0] = kOSlash;
    for (int i = 0; i < 60; ++i) {
        sixty += "\u00f8";
    }
    EXPECT_EQ(encode(sixty), sixty_ids);
    // Counted after normalization: 100 á (a + U+0301 after NFD, 200 characters) are 100 a.
    std::string accented;
    for (int i = 0; i < 100; ++i) {
        accented += "\u00e1";
    }
    EXPECT_EQ(encode(accented), hundred);
}

TEST(WordPiece, SpecialTokensAndTemplate) {
    EXPECT_EQ(encode("Hello, World!", true), (Ids{kCls, kHello, kComma, kWorld, kBang, kSep}));
    EXPECT_EQ(encode("", true), (Ids{kCls, kSep}));
    // The added tokens (normalized false) are cut from the raw text first.
    EXPECT_EQ(encode("hello [MASK]!"), (Ids{kHello, kMask, kBang}));
    EXPECT_EQ(encode("[CLS]hello[SEP]"), (Ids{kCls, kHello, kSep}));
    // Matched as written: "[mask]" is text, [ mask ] with none of them in the vocabulary.
    EXPECT_EQ(encode("[mask]"), (Ids{kUnk, kUnk, kUnk}));
    const Tokenizer& t = bert();
    EXPECT_EQ(t.vocab_size(), kVocabSize);
    EXPECT_EQ(t.find("##ing"), kIng);
    EXPECT_EQ(t.token(kIng), "##ing");
    EXPECT_TRUE(t.is_special(kCls));
    EXPECT_FALSE(t.is_special(kHello));
}

TEST(WordPiece, DecodeJoinsPiecesAndCleansUp) {
    const Tokenizer& t = bert();
    const Ids ids{kCls, kHello, kComma, kWorld, kBang, kSep};
    // Spaces between words, "##" pieces glued on, then " ," and " !" cleaned up in each token.
    EXPECT_EQ(t.decode(ids), "[CLS] hello, world! [SEP]");
    EXPECT_EQ(t.decode(ids, true), "hello, world!");
    EXPECT_EQ(t.decode(Ids{kUn, kAff, kAble, kPlay, kIng}), "unaffable playing");
    EXPECT_EQ(t.decode(Ids{kHello, kDot, kQuestion, kBang, kComma}), "hello.?!,");
    // Cleanup sees one token at a time: " '" is not " ' ", so the apostrophe keeps its spaces.
    EXPECT_EQ(t.decode(Ids{kDon, kApostrophe, kT}), "don ' t");
    // The first token keeps its prefix.
    EXPECT_EQ(t.decode(Ids{kS, kHello, kS}), "##s hellos");
    EXPECT_EQ(t.decode(Ids{}), "");
    const Tokenizer raw = edited([](nlohmann::ordered_json& d) { d["decoder"]["cleanup"] = false; });
    EXPECT_EQ(raw.decode(Ids{kHello, kComma, kWorld, kBang}), "hello , world !");

    // Streamed, one id at a time, the same text.
    TextStream stream(t);
    std::string streamed;
    for (const TokenId id : ids) {
        streamed += stream.push(id);
    }
    streamed += stream.finish();
    EXPECT_EQ(streamed, "hello, world!");
}

// The components alone, for what the fixture cannot reach.
TEST(WordPiece, ModelAlone) {
    // An empty prefix: continuing pieces are looked up as they are.
    const WordPieceModel plain({"[UNK]", "ab", "c", "abc"}, {.unk = 0, .continuing_subword_prefix = ""});
    Ids ids;
    plain.tokenize("abcc", ids);
    EXPECT_EQ(ids, (Ids{3, 2}));
    // A token longer in bytes than any other is still found when characters are multi-byte, and
    // a piece whose characters are longer than every token is [UNK].
    const WordPieceModel wide({"[UNK]", "\u00e9\u00e9", "##\u00e9"}, {.unk = 0, .max_input_chars_per_word = 3});
    ids.clear();
    wide.tokenize("\u00e9\u00e9\u00e9", ids);
    EXPECT_EQ(ids, (Ids{1, 2}));
    ids.clear();
    wide.tokenize("\u00e9\u00e9\u00e9\u00e9", ids);  // 4 characters > 3
    EXPECT_EQ(ids, (Ids{0}));
    // The longest token of the vocabulary, at the start of a piece, is found.
    const WordPieceModel longest({"[UNK]", "abcdefgh", "##i"}, {.unk = 0});
    ids.clear();
    longest.tokenize("abcdefghi", ids);
    EXPECT_EQ(ids, (Ids{1, 2}));
    ids = {7};
    wide.tokenize("\U0001F642", ids);  // already there ids stay; 🙂 is [UNK]
    EXPECT_EQ(ids, (Ids{7, 0}));
}

TEST(WordPiece, ChineseCharacterRanges) {
    for (const char32_t c : {0x4E00, 0x9FFF, 0x3400, 0x4DBF, 0x20000, 0x2A6DF, 0x2A700, 0x2B73F, 0x2B740, 0x2B81F,
                             0x2B920, 0x2CEAF, 0xF900, 0xFAFF, 0x2F800, 0x2FA1F}) {
        EXPECT_TRUE(is_bert_chinese_char(c)) << std::hex << static_cast<unsigned>(c);
    }
    for (const char32_t c : {0x4DFF, 0xA000, 0x33FF, 0x2B820, 0x2B91F, 0x2CEB0, 0xF8FF, 0xFB00, 0x3042, 0xAC00}) {
        EXPECT_FALSE(is_bert_chinese_char(c)) << std::hex << static_cast<unsigned>(c);
    }
}

}  // namespace
}  // namespace vkf::text
