// Whole tokenizers from the hand-written fixtures of tests/text/data: ids derived by hand from
// make_fixtures.py's merges (byte b has id b, merge i makes id 256 + i, added tokens follow at
// N = 287), round trips of multilingual and seeded random text, and TextStream stopped at every
// point of a generation.

#include "base/error.hpp"
#include "host/io/json.hpp"
#include "host/text/byte_level.hpp"
#include "host/text/tokenizer.hpp"
#include "tests/support/test_support.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace vkf::text {
namespace {

using Ids = std::vector<TokenId>;
using namespace std::string_literals;

constexpr TokenId N = 287;  // the first id after the fixtures' vocabulary

// Merged tokens of make_fixtures.py.
constexpr TokenId kThe = 258, kAnd = 262, kOr = 263, kWorld = 267, kHello = 271, k12 = 272;
constexpr TokenId kSpace2 = 273, kNewline2 = 274, kEr = 281, kDashes = 282;
constexpr TokenId kNi = 278;  // 日
constexpr TokenId kXDash = 283, kYDash = 284, kDashY = 285, kDashX = 286;

const Tokenizer& fixture(const std::string& name) {
    static std::map<std::string, Tokenizer> loaded;
    auto it = loaded.find(name);
    if (it == loaded.end()) {
        it = loaded.emplace(name, Tokenizer::load(std::string(VKF_TEXT_DATA) + "/" + name)).first;
    }
    return it->second;
}

Ids encode(const std::string& name, std::string_view text, bool add_special_tokens = true) {
    return fixture(name).encode(text, add_special_tokens);
}

TEST(Tokenizer, ByteLevelBpeIdsByHand) {
    for (const char* name : {"byte_bpe.json", "byte_bpe_pairs.json"}) {
        SCOPED_TRACE(name);
        // "Hello", "Ġworld": e l first (rank 12), then ell, Hell, Hello; o r (7), Ġ w (8), Ġw or, l d, Ġwor ld.
        EXPECT_EQ(encode(name, "Hello world"), (Ids{kHello, kWorld}));
        // "the" has no Ġ: t + he; "Ġthen": Ġt (0), he (1), Ġthe (2), n.
        EXPECT_EQ(encode(name, "the then"), (Ids{'t', 257, kThe, 'n'}));
        EXPECT_EQ(encode(name, "12 and 3"), (Ids{k12, kAnd, ' ', '3'}));
        // GPT-2's pattern leaves one space for the next word: "ĠĠĠ" is ĠĠ + Ġ, "ĠĠĠĠ" two ĠĠ then ĠĠĠĠ.
        EXPECT_EQ(encode(name, "a    b"), (Ids{'a', kSpace2, ' ', ' ', 'b'}));
        EXPECT_EQ(encode(name, "a     b"), (Ids{'a', 280, ' ', 'b'}));
        EXPECT_EQ(encode(name, "\n\n"), (Ids{kNewline2}));
        // 日本: E6 97 A5 E6 9C AC; æĹ then æĹ¥ make 日, 本 stays three bytes.
        EXPECT_EQ(encode(name, "日本"), (Ids{kNi, 0xE6, 0x9C, 0xAC}));
        EXPECT_EQ(encode(name, ""), Ids{});
    }
}

TEST(Tokenizer, AddedTokens) {
    const std::string name = "byte_bpe.json";  // <|endoftext|> N, <mask> N+1 (lstrip), [rs] N+2 (rstrip), word N+3
    EXPECT_EQ(encode(name, "Hello<|endoftext|>world"), (Ids{kHello, N, 'w', kOr, 266}));
    EXPECT_EQ(encode(name, "<|endoftext|><|endoftext|>"), (Ids{N, N}));
    // lstrip takes the space before <mask>: "a" alone, then " b".
    EXPECT_EQ(encode(name, "a <mask> b"), (Ids{'a', N + 1, ' ', 'b'}));
    // rstrip takes the spaces after [rs]: "after" is a f t er with no Ġ.
    EXPECT_EQ(encode(name, "[rs]   after"), (Ids{N + 2, 'a', 'f', 't', kEr}));
    // single_word: "word" inside "keyword" and "words" is text.
    EXPECT_EQ(encode(name, "word keyword words word."),
              (Ids{N + 3, ' ', 'k', 'e', 'y', 'w', kOr, 'd', 265, 'd', 's', ' ', N + 3, '.'}));
}

TEST(Tokenizer, NormalizedAddedTokensAndNfkcLowercase) {
    const std::string name = "nfkc_lowercase.json";  // "Hello" (normalized, id 271), "ABC" (raw, id N)
    // The normalized text "hello" matches "Hello"'s pattern ("hello"), which keeps its vocabulary id.
    EXPECT_EQ(encode(name, "HELLO Hello"), (Ids{kHello, ' ', kHello}));
    // "ABC" matches the raw text only.
    EXPECT_EQ(encode(name, "ABC abc"), (Ids{N, 260, 'b', 'c'}));
    // NFKC: ﬁ is fi, full-width Ｈｅｌｌｏ is Hello.
    EXPECT_EQ(encode(name, "\ufb01"), (Ids{'f', 'i'}));
    EXPECT_EQ(encode(name, "\uff28\uff45\uff4c\uff4c\uff4f"), (Ids{kHello}));
    EXPECT_EQ(fixture(name).find("ABC"), N);
    EXPECT_EQ(fixture(name).vocab_size(), N + 1);
}

TEST(Tokenizer, SplitBehaviors) {
    // '-' merges with x and y (and itself) only when the behavior puts them in one piece.
    EXPECT_EQ(encode("split_isolated.json", "x--y-x"), (Ids{'x', '-', '-', 'y', '-', 'x'}));
    EXPECT_EQ(encode("split_contiguous.json", "x--y-x"), (Ids{'x', kDashes, 'y', '-', 'x'}));
    EXPECT_EQ(encode("split_merged_previous.json", "x--y-x"), (Ids{kXDash, '-', kYDash, 'x'}));
    EXPECT_EQ(encode("split_merged_next.json", "x--y-x"), (Ids{'x', '-', kDashY, kDashX}));
    EXPECT_EQ(encode("split_removed.json", "a  b\tc\n"), (Ids{'a', 'b', 'c'}));
    EXPECT_EQ(encode("split_invert.json", "ab12cd!"), (Ids{'a', 'b', 'c', 'd'}));
}

TEST(Tokenizer, DigitsPunctuationWhitespaceSequence) {
    EXPECT_EQ(encode("digits.json", "a123"), (Ids{'a', '1', '2', '3'}));
    EXPECT_EQ(encode("digits_contiguous.json", "a123"), (Ids{'a', k12, '3'}));
    EXPECT_EQ(encode("punctuation.json", "x--y"), (Ids{'x', '-', '-', 'y'}));
    EXPECT_EQ(encode("punctuation_contiguous.json", "x--y"), (Ids{'x', kDashes, 'y'}));
    EXPECT_EQ(encode("whitespace.json", "x- y"), (Ids{'x', '-', 'y'}));
    EXPECT_EQ(encode("whitespace_split.json", "x- y"), (Ids{kXDash, 'y'}));
    // \p{N}+ split off, digits apart, a prefix space on every piece: Ġa b, Ġ1, Ġ2.
    EXPECT_EQ(encode("sequence.json", "ab12"), (Ids{260, 'b', ' ', '1', ' ', '2'}));
    // BLOOM's pattern: punctuation and "(" stand alone, " (" is a gap between matches.
    EXPECT_EQ(encode("bloom_style.json", "Hello, world. (x)"), (Ids{kHello, ',', kWorld, '.', ' ', '(', 'x', ')'}));
}

TEST(Tokenizer, TemplateBosEos) {
    const std::string name = "template_bos_eos.json";  // <s> N, </s> N+1, <pad> N+2; a prefix space
    const Tokenizer& t = fixture(name);
    const Ids ids = t.encode("Hello world");
    EXPECT_EQ(ids, (Ids{N, ' ', kHello, kWorld, N + 1}));
    EXPECT_EQ(t.encode("Hello world", false), (Ids{' ', kHello, kWorld}));
    EXPECT_EQ(t.encode(""), (Ids{N, N + 1}));
    EXPECT_TRUE(t.is_special(N));
    EXPECT_FALSE(t.is_special(kHello));
    EXPECT_EQ(t.token(N + 2), "<pad>");
    EXPECT_EQ(t.token(kWorld), "\u0120world");
    EXPECT_EQ(t.find("\u0120world"), kWorld);
    EXPECT_FALSE(t.find("nope").has_value());
    EXPECT_EQ(t.vocab_size(), N + 3);
    // The decoder strips the prefix space (Strip, start 1) of the whole text.
    EXPECT_EQ(t.decode(ids), "<s> Hello world</s>");
    EXPECT_EQ(t.decode(ids, true), "Hello world");
    EXPECT_THROW(t.token(N + 3), Error);
    EXPECT_THROW(t.decode(Ids{N + 3}), Error);
}

TEST(Tokenizer, SentencePieceStyleBpe) {
    // "▁" for spaces by Prepend and Replace, no pre-tokenizer, byte tokens (3 + byte) for ASCII
    // only, other characters unk (0, fused); "▁the" is 162, "▁world" 171, "▁a" 163.
    const Tokenizer& t = fixture("sentencepiece_style.json");
    const Ids ids = t.encode("the world");
    EXPECT_EQ(ids, (Ids{1, 162, 171}));
    EXPECT_EQ(t.decode(ids), "<s> the world");
    EXPECT_EQ(t.decode(ids, true), "the world");
    // H has no token: its byte <0x48>; é has neither: unk, which Hugging Face emits only before
    // the next character in the vocabulary, after the byte token of '!'.
    EXPECT_EQ(t.encode("Hi é!"), (Ids{1, 131, 3 + 'H', 132 + 'i' - 'a', 131, 3 + '!', 0}));
    EXPECT_EQ(t.encode("ab éé", false), (Ids{163, 133, 131, 0}));
}

TEST(Tokenizer, ContinuingSubwordPrefixAndBertProcessing) {
    // [UNK] 0, [CLS] 1, [SEP] 2, a..z 3.., ##a..##z 29..; "the" 59, "world" 66, "and" 61, "##er" 62.
    const Tokenizer& t = fixture("continuing_prefix.json");
    const Ids ids = t.encode("The world!");
    EXPECT_EQ(ids, (Ids{1, 59, 66, 57, 2}));
    EXPECT_EQ(t.encode("ander", false), (Ids{61, 62}));
    EXPECT_EQ(t.encode("xéy", false), (Ids{3 + 'x' - 'a', 0, 29 + 'y' - 'a'}));
    // No decoder: the tokens joined with spaces.
    EXPECT_EQ(t.decode(ids), "[CLS] the world ! [SEP]");
    EXPECT_EQ(t.decode(ids, true), "the world !");
}

TEST(Tokenizer, EndOfWordSuffixIgnoreMergesAndRobertaProcessing) {
    // <unk> 0, <s> 1, </s> 2, a..z 3.., a</w>..z</w> 29.., "cat" 58; "the</w>" 60, "world</w>" 67.
    const Tokenizer& t = fixture("end_of_word_suffix.json");
    // "cat" is a token no merge makes: ignore_merges takes it whole.
    EXPECT_EQ(t.encode("  The World cat "), (Ids{1, 60, 67, 58, 2}));
    EXPECT_EQ(t.encode("cats", false), (Ids{3 + 'c' - 'a', 3, 3 + 't' - 'a', 29 + 's' - 'a'}));
    // NFD leaves a combining accent, which is unknown.
    EXPECT_EQ(t.encode("café", false), (Ids{3 + 'c' - 'a', 3, 3 + 'f' - 'a', 3 + 'e' - 'a', 0}));
    EXPECT_EQ(t.decode(Ids{60, 67}), "the world ");
}

TEST(Tokenizer, ByteLevelNormalizerAndNormalizedAddedTokens) {
    const Tokenizer& t = fixture("byte_level_normalizer.json");  // <|endoftext|> N, "New York" N + 1
    EXPECT_EQ(t.encode("Hello world"), (Ids{kHello, kWorld, N}));
    // "New York" is matched in the normalized text as "NewĠYork"; "IĠloveĠ" splits before each Ġ.
    const Ids ids = t.encode("I love New York");
    EXPECT_EQ(ids, (Ids{'I', ' ', 'l', 'o', 'v', 'e', ' ', N + 1, N}));
    // It decodes as its normalized form, which the ByteLevel decoder turns back into the text.
    EXPECT_EQ(t.token(N + 1), "New\u0120York");
    EXPECT_EQ(t.decode(ids), "I love New York<|endoftext|>");
    EXPECT_EQ(t.decode(ids, true), "I love New York");
    EXPECT_EQ(t.find("New York"), N + 1);
}

// Bytes the decoder gives back for texts, and texts that must come back exactly.
const std::vector<std::string> kTexts = {
    "Hello world, the quick brown fox jumps over the lazy dog.",
    "日本語のテキスト、中文分词测试：你好，世界！",
    "مرحبا بالعالم، كيف حالك؟ שלום עולם",
    "हिन्दी पाठ। 한국어 문장입니다 Ελληνικά ΟΔΥΣΣΕΥΣ",
    "emoji 🙂👍🏽 👨‍👩‍👧‍👦 family 🏳️‍🌈 flag 🇯🇵",
    "e\u0301 a\u0308\u0301 combining marks, Z\u0351\u0352\u0353algo",
    "  runs of spaces   \t\ttabs\n\nnewlines \r\n and \u00a0\u3000\u2028 others ",
    "digits 0123456789 ٣٤٥ ²³ Ⅻ 3.14159 1,000,000",
    "punctuation!?.,;:'\"()[]{}<>@#$%^&*-_=+\\|/~`",
    "nul \0 and \x01\x1f controls \x7f"s,
    "word-word--word---x",
};

// Fixtures whose decoder gives back the encoded text exactly (the others drop spaces, add a
// prefix space or normalize).
const std::vector<std::string> kRoundTripFixtures = {
    "byte_bpe.json",
    "byte_bpe_pairs.json",
    "bloom_style.json",
    "digits.json",
    "digits_contiguous.json",
    "punctuation.json",
    "punctuation_contiguous.json",
    "split_isolated.json",
    "split_contiguous.json",
    "split_merged_previous.json",
    "split_merged_next.json",
};

TEST(Tokenizer, MultilingualRoundTrips) {
    for (const std::string& name : kRoundTripFixtures) {
        for (const std::string& text : kTexts) {
            EXPECT_EQ(fixture(name).decode(fixture(name).encode(text)), text) << name << ": " << text;
        }
    }
    // A prefix space and a decoder that strips it: exact for texts that do not start with a space.
    const Tokenizer& t = fixture("template_bos_eos.json");
    for (const std::string& text : kTexts) {
        if (!text.starts_with(' ')) {
            EXPECT_EQ(t.decode(t.encode(text), true), text) << text;
        }
    }
}

// A seeded random string of code points from many scripts, whitespace and controls.
std::string random_text(std::mt19937_64& rng, std::size_t length) {
    static const std::vector<std::pair<char32_t, char32_t>> ranges = {
        {0x00, 0x7F},     {0x80, 0xFF},     {0x300, 0x36F},     {0x370, 0x3FF},      {0x400, 0x4FF},
        {0x590, 0x6FF},   {0x900, 0x97F},   {0x2000, 0x206F},   {0x3000, 0x30FF},    {0x4E00, 0x9FFF},
        {0xAC00, 0xD7A3}, {0xFE00, 0xFFFD}, {0x1F300, 0x1FAFF}, {0x10000, 0x10FFFF},
    };
    std::string text;
    for (std::size_t i = 0; i < length; ++i) {
        const auto& [lo, hi] = ranges[rng() % ranges.size()];
        char32_t cp = lo + static_cast<char32_t>(rng() % (hi - lo + 1));
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            cp = 'x';
        }
        if (rng() % 4 == 0) {
            cp = U" \t\n-0aé"[rng() % 7];
        }
        std::string utf8;
        if (cp < 0x80) {
            utf8 = std::string(1, static_cast<char>(cp));
        } else if (cp < 0x800) {
            utf8 = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
        } else if (cp < 0x10000) {
            utf8 = {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
                    static_cast<char>(0x80 | (cp & 0x3F))};
        } else {
            utf8 = {static_cast<char>(0xF0 | (cp >> 18)), static_cast<char>(0x80 | ((cp >> 12) & 0x3F)),
                    static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), static_cast<char>(0x80 | (cp & 0x3F))};
        }
        text += utf8;
    }
    return text;
}

TEST(Tokenizer, SeededRandomTextRoundTrips) {
    std::mt19937_64 rng(20261124);
    for (int i = 0; i < 200; ++i) {
        const std::string text = random_text(rng, 1 + rng() % 64);
        for (const std::string& name : kRoundTripFixtures) {
            ASSERT_EQ(fixture(name).decode(fixture(name).encode(text)), text) << name << ", string " << i;
        }
    }
}

// TextStream stopped after every id (with finish) gives decode of the ids so far, and the
// pieces it hands out add up to it.
void check_stream(const Tokenizer& t, const Ids& ids, bool skip_special) {
    for (std::size_t stop = 0; stop <= ids.size(); ++stop) {
        TextStream stream(t, skip_special);
        std::string streamed;
        for (std::size_t i = 0; i < stop; ++i) {
            const std::string piece = stream.push(ids[i]);
            ASSERT_EQ(piece.find("\xEF\xBF\xBD"), std::string::npos) << "a U+FFFD before finish, id " << i;
            streamed += piece;
        }
        streamed += stream.finish();
        const Ids prefix(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(stop));
        ASSERT_EQ(streamed, t.decode(prefix, skip_special)) << "stopped after " << stop << " ids";
    }
}

TEST(Tokenizer, TextStreamAtEverySplitPoint) {
    for (const std::string& text : kTexts) {
        for (const char* name :
             {"byte_bpe.json", "bloom_style.json", "template_bos_eos.json", "sentencepiece_style.json",
              "continuing_prefix.json", "end_of_word_suffix.json", "byte_level_normalizer.json"}) {
            SCOPED_TRACE(std::string(name) + ": " + text);
            const Tokenizer& t = fixture(name);
            check_stream(t, t.encode(text), true);
            check_stream(t, t.encode(text), false);
        }
    }
    // Ids that never complete a character: the leftovers come out as U+FFFD at the end.
    const Tokenizer& t = fixture("byte_bpe.json");
    TextStream stream(t);
    EXPECT_EQ(stream.push(0xE6), "");
    EXPECT_EQ(stream.push(0x97), "");
    EXPECT_EQ(stream.push('a'),
              "\xEF\xBF\xBD"
              "a");
    EXPECT_EQ(stream.push(0xF0), "");
    EXPECT_EQ(stream.finish(), "\xEF\xBF\xBD");
    EXPECT_EQ(stream.push(kHello), "Hello");
}

TEST(Tokenizer, RefusesInvalidUtf8Input) {
    const Tokenizer& t = fixture("byte_bpe.json");
    const std::string message = vkf::test::error_message([&] { t.encode("ok \xC3\x28 no"); });
    EXPECT_NE(message.find("not valid UTF-8 (byte 3, 0xc3)"), std::string::npos) << message;
    EXPECT_NE(message.find("byte_bpe.json"), std::string::npos) << message;
    EXPECT_THROW(t.encode("\xED\xA0\x80"), Error);  // a surrogate
}

// A few hundred KB of seeded words, spaces and commas.
std::string seeded_words(std::size_t bytes) {
    std::mt19937_64 rng(7);
    std::vector<std::string> words;
    for (int i = 0; i < 3000; ++i) {
        std::string w;
        for (std::size_t n = 1 + rng() % 9; n > 0; --n) {
            w += static_cast<char>('a' + rng() % 26);
        }
        words.push_back(w);
    }
    std::string text;
    while (text.size() < bytes) {
        text += words[rng() % words.size()] + (rng() % 10 == 0 ? ", " : " ");
    }
    return text;
}

// A BLOOM-sized vocabulary (250k tokens, as many merges) of seeded random byte-level merges loads
// and round-trips. How long loading it and encoding 300 KB take is printed, not checked (tests
// assert no speed).
TEST(Tokenizer, BloomSizedVocabulary) {
    std::mt19937_64 rng(250880);
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) {
        tokens.emplace_back(byte_level_char(static_cast<unsigned char>(b)));
    }
    std::set<std::string> seen(tokens.begin(), tokens.end());
    std::vector<std::string> merges;
    while (tokens.size() < 250000) {
        // Short tokens joined to tokens of any length, as trained merges look.
        const std::string& left = tokens[rng() % tokens.size()];
        const std::string& right = tokens[rng() % std::min<std::size_t>(tokens.size(), 2048)];
        std::string merged = left + right;
        if (merged.size() > 48 || !seen.insert(merged).second) {
            continue;
        }
        merges.push_back(left + " " + right);
        tokens.push_back(std::move(merged));
    }
    // Written as text: nlohmann's ordered objects search their keys one by one.
    const auto quoted = [](const std::string& s) { return nlohmann::json(s).dump(); };
    const std::string byte_level = R"({"type": "ByteLevel", "add_prefix_space": false})";
    std::string document = R"({"version": "1.0", "added_tokens": [], "pre_tokenizer": )" + byte_level +
                           R"(, "decoder": )" + byte_level + R"(, "model": {"type": "BPE", "vocab": {)";
    for (std::size_t id = 0; id < tokens.size(); ++id) {
        document += (id == 0 ? "" : ",") + quoted(tokens[id]) + ":" + std::to_string(id);
    }
    document += R"(}, "merges": [)";
    for (std::size_t i = 0; i < merges.size(); ++i) {
        document += (i == 0 ? "" : ",") + quoted(merges[i]);
    }
    document += "]}}";
    vkf::test::TempDir dir("vkf_tokenizer_large");
    const std::filesystem::path file = dir.path() / "tokenizer.json";
    std::ofstream(file) << document;

    const auto start = std::chrono::steady_clock::now();
    const Tokenizer t = Tokenizer::load(file);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("load: %zu tokens, %zu merges, %.1f MB of JSON in %.3f s\n", tokens.size(), merges.size(),
                static_cast<double>(std::filesystem::file_size(file)) / 1e6, seconds);
    EXPECT_EQ(t.vocab_size(), 250000u);
    std::mt19937_64 text_rng(3);
    for (int i = 0; i < 50; ++i) {
        const std::string text = random_text(text_rng, 200);
        ASSERT_EQ(t.decode(t.encode(text)), text);
    }
    // Letters, which the first merges join often enough to shorten a text.
    std::string letters;
    for (int i = 0; i < 2000; ++i) {
        letters += static_cast<char>('a' + text_rng() % 26);
    }
    const Ids ids = t.encode(letters);
    EXPECT_LT(ids.size(), letters.size());
    EXPECT_EQ(t.decode(ids), letters);

    // Repeated words (the cache's case) and seeded multilingual text (few repeats).
    std::string mixed;
    while (mixed.size() < 300000) {
        mixed += random_text(text_rng, 100);
    }
    for (const auto& [what, text] : {std::pair{"seeded words", seeded_words(300000)}, std::pair{"mixed text", mixed}}) {
        const auto encode_start = std::chrono::steady_clock::now();
        const Ids text_ids = t.encode(text);
        const double encode_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - encode_start).count();
        std::printf("encode: %zu bytes of %s, %zu ids in %.3f s (%.1f MB/s)\n", text.size(), what, text_ids.size(),
                    encode_seconds, static_cast<double>(text.size()) / encode_seconds / 1e6);
        EXPECT_EQ(t.decode(text_ids), text);
    }
}

}  // namespace
}  // namespace vkf::text
