// The strict JSON reader: every value kind, every escape, exact 64-bit integers, the
// errors for malformed text (with line and column), the typed accessors' messages naming
// the key path, the nesting limit, and a mutation fuzz that must never crash.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "host/io/json.hpp"
#include "tests/support/test_support.hpp"

namespace {

using vkf::JsonKind;
using vkf::JsonValue;
using vkf::parse_json;

JsonValue parse(std::string_view text) {
    return parse_json(text, "test.json");
}

using vkf::test::error_message;

// The message of the vkf::Error that parsing `text` throws; fails the test when none.
std::string parse_error(std::string_view text) {
    return error_message([&] { parse(text); });
}

TEST(Json, ParsesScalars) {
    EXPECT_TRUE(parse("null").is_null());
    EXPECT_TRUE(parse("true").as_bool());
    EXPECT_FALSE(parse(" \t\r\nfalse\n").as_bool());
    EXPECT_EQ(parse("\"text\"").as_string(), "text");
    EXPECT_EQ(parse("42").as_int64(), 42);
    EXPECT_DOUBLE_EQ(parse("-1.5e-3").as_double(), -1.5e-3);
}

TEST(Json, ParsesNestedStructuresInOrder) {
    const JsonValue root = parse(R"({"b": [1, 2, {"c": null}], "a": {}, "e": [], "d": "x"})");
    ASSERT_EQ(root.kind(), JsonKind::Object);
    ASSERT_EQ(root.size(), 4u);
    EXPECT_EQ(root.as_object()[0].key, "b");
    EXPECT_EQ(root.as_object()[3].key, "d");
    EXPECT_EQ(root.at("b").size(), 3u);
    EXPECT_EQ(root.at("b").at(std::size_t{1}).as_int64(), 2);
    EXPECT_TRUE(root.at("b").at(std::size_t{2}).at("c").is_null());
    EXPECT_EQ(root.at("a").size(), 0u);
    EXPECT_EQ(root.at("e").size(), 0u);
    EXPECT_EQ(root.find("missing"), nullptr);
    EXPECT_EQ(root.at("b").at(std::size_t{2}).at("c").path(), "b[2].c");
    EXPECT_EQ(root.path(), "");
    EXPECT_EQ(root.source(), "test.json");
}

TEST(Json, DecodesEveryEscape) {
    EXPECT_EQ(parse(R"("\" \\ \/ \b \f \n \r \t")").as_string(), "\" \\ / \b \f \n \r \t");
    EXPECT_EQ(parse(R"("\u0041\u00e9\u20AC")").as_string(), "A\xc3\xa9\xe2\x82\xac");
    // U+1F600 as a surrogate pair, and U+10FFFF, the largest code point.
    EXPECT_EQ(parse(R"("\ud83d\ude00")").as_string(), "\xf0\x9f\x98\x80");
    EXPECT_EQ(parse(R"("\uDBFF\uDFFF")").as_string(), "\xf4\x8f\xbf\xbf");
    const std::string nul = parse(R"("a\u0000b")").as_string();
    EXPECT_EQ(nul, std::string("a\0b", 3));
    // Raw UTF-8 passes through unchanged.
    EXPECT_EQ(parse("\"h\xc3\xa9llo \xf0\x9f\x98\x80\"").as_string(), "h\xc3\xa9llo \xf0\x9f\x98\x80");
}

TEST(Json, RefusesBadStrings) {
    EXPECT_NE(parse_error(R"("\ud83d")").find("must be followed by U+DC00..U+DFFF"), std::string::npos);
    EXPECT_NE(parse_error(R"("\ud83dx")").find("must be followed by U+DC00..U+DFFF"), std::string::npos);
    EXPECT_NE(parse_error(R"("\ud83d\u0041")").find("must be followed by U+DC00..U+DFFF"), std::string::npos);
    EXPECT_NE(parse_error(R"("\ude00")").find("must follow U+D800..U+DBFF"), std::string::npos);
    EXPECT_NE(parse_error(R"("\x")").find("forbidden character after backslash"), std::string::npos);
    EXPECT_NE(parse_error(R"("\u12G4")").find("must be followed by 4 hex digits"), std::string::npos);
    EXPECT_NE(parse_error(R"("\u12)").find("must be followed by 4 hex digits"), std::string::npos);
    EXPECT_NE(parse_error("\"tab\there\"").find("control character"), std::string::npos);
    EXPECT_NE(parse_error("\"abc").find("missing closing quote"), std::string::npos);
    EXPECT_NE(parse_error("\"abc\\").find("forbidden character after backslash"), std::string::npos);
    EXPECT_NE(parse_error("'single'").find("invalid literal"), std::string::npos);
    // Invalid UTF-8: stray continuation, overlong '/', encoded surrogate, beyond U+10FFFF,
    // truncated sequence.
    for (const char* bad : {"\"\x80\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xe2\x82\""}) {
        EXPECT_NE(parse_error(bad).find("ill-formed UTF-8 byte"), std::string::npos) << bad;
    }
}

TEST(Json, IntegersAreExact) {
    const JsonValue max_int = parse("9223372036854775807");
    EXPECT_EQ(max_int.as_int64(), std::numeric_limits<std::int64_t>::max());
    EXPECT_EQ(max_int.as_uint64(), 9223372036854775807ull);
    EXPECT_EQ(parse("-9223372036854775808").as_int64(), std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(parse("18446744073709551615").as_uint64(), std::numeric_limits<std::uint64_t>::max());
    // 2^53 + 1 is not a double, but is exact as an integer.
    EXPECT_EQ(parse("9007199254740993").as_int64(), 9007199254740993);
    EXPECT_EQ(parse("0").as_uint64(), 0u);
    EXPECT_EQ(parse("-0").as_int64(), 0);
    // Integral values written as floats are integers too; fractions are not.
    EXPECT_EQ(parse("2.0").as_int64(), 2);
    EXPECT_EQ(parse("1e3").as_uint64(), 1000u);
    EXPECT_NE(error_message([] { parse("1.5").as_int64(); }).find("expected an integer, got number 1.5"),
              std::string::npos);
    EXPECT_NE(error_message([] { parse("-3").as_uint64(); }).find("expected a non-negative integer, got number -3"),
              std::string::npos);
    // Beyond 64 bits: a number, but no integer.
    const JsonValue huge = parse("123456789012345678901234567890");
    EXPECT_NEAR(huge.as_double(), 1.2345678901234568e29, 1e14);
    EXPECT_THROW(huge.as_uint64(), vkf::Error);
    EXPECT_NE(error_message([] { parse("18446744073709551615").as_int64(); }).find("expected an integer in ["),
              std::string::npos);
}

TEST(Json, AsIntegerChecksTheRange) {
    EXPECT_EQ(parse("4294967295").as_integer<std::uint32_t>(), 4294967295u);
    EXPECT_EQ(parse("-128").as_integer<std::int8_t>(), -128);
    const std::string message = error_message([] { parse("4294967296").as_integer<std::uint32_t>(); });
    EXPECT_NE(message.find("expected an integer in [0, 4294967295], got number 4294967296"), std::string::npos)
        << message;
    EXPECT_THROW(parse("-1").as_integer<std::uint16_t>(), vkf::Error);
    EXPECT_THROW(parse("128").as_integer<std::int8_t>(), vkf::Error);
}

TEST(Json, ParsesNumbersLikeStrtod) {
    EXPECT_DOUBLE_EQ(parse("0.1").as_double(), 0.1);
    EXPECT_DOUBLE_EQ(parse("1E+2").as_double(), 100.0);
    EXPECT_DOUBLE_EQ(parse("-0.0").as_double(), 0.0);
    EXPECT_TRUE(std::signbit(parse("-0.0").as_double()));
    EXPECT_DOUBLE_EQ(parse("1.7976931348623157e308").as_double(), std::numeric_limits<double>::max());
    EXPECT_DOUBLE_EQ(parse("5e-324").as_double(), std::numeric_limits<double>::denorm_min());
    // Underflow rounds to zero as every reader does; overflow is refused.
    EXPECT_EQ(parse("1e-400").as_double(), 0.0);
    EXPECT_EQ(parse("0.0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
                    "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
                    "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
                    "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001")
                  .as_double(),
              0.0);
    EXPECT_NE(parse_error("1e400").find("number overflow parsing '1e400'"), std::string::npos);
    EXPECT_NE(parse_error("-1e99999999999999999999999").find("number overflow"), std::string::npos);
}

TEST(Json, RefusesMalformedNumbers) {
    for (const char* bad : {"01", "-01", "1.", ".5", "+1", "-", "1e", "1e+", "0x10", "NaN", "Infinity", "-Infinity",
                            "1.e5", "--1", "1_000"}) {
        EXPECT_THROW(parse(bad), vkf::Error) << bad;
    }
    EXPECT_NE(parse_error("01").find("unexpected number literal; expected end of input"), std::string::npos);
}

TEST(Json, RefusesMalformedStructure) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "unexpected end of input"},
        {"   \n ", "unexpected end of input"},
        {"[1, 2,]", "unexpected ']'"},
        {"{\"a\": 1,}", "expected string literal"},
        {"{\"a\" 1}", "expected ':'"},
        {"{a: 1}", "expected string literal"},
        {"[1 2]", "expected ']'"},
        {"{\"a\": 1 \"b\": 2}", "expected '}'"},
        {"[1, 2", "unexpected end of input"},
        {"{\"a\": ", "unexpected end of input"},
        {"{\"a\": 1, \"a\": 2}", "duplicate key 'a'"},
        {"1 2", "expected end of input"},
        {"{} x", "expected end of input"},
        {"tru", "invalid literal"},
        {"nul", "invalid literal"},
        {"True", "invalid literal"},
        {"/* comment */ 1", "invalid literal"},
        {"\xef\xbb\xbf{}", "byte order mark"},
        {std::string("[1]\0", 4), "byte 0x00"},
    };
    for (const auto& [text, expected] : cases) {
        const std::string message = parse_error(text);
        EXPECT_NE(message.find(expected), std::string::npos) << "input: " << text << "\nmessage: " << message;
        EXPECT_EQ(message.rfind("test.json: line ", 0), 0u) << message;
    }
}

TEST(Json, ReportsLineAndColumn) {
    const std::string message = parse_error("{\n  \"a\": 1,\n  \"b\": tru\n}");
    EXPECT_NE(message.find("test.json: line 3, column 11:"), std::string::npos) << message;
    const std::string duplicate = parse_error("{\"n_head\": 1,\n\"n_head\": 2}");
    EXPECT_NE(duplicate.find("line 2, column 1: duplicate key 'n_head'"), std::string::npos) << duplicate;
}

// Objects of more than a few keys are checked through a hash index (a tokenizer.json vocabulary
// has 250k keys): a repeat is found wherever it is, with nested objects between.
TEST(Json, RefusesRepeatedKeysInLargeObjects) {
    for (const int count : {3, 17, 100, 5000}) {
        for (const int repeated : {0, count / 2, count - 1}) {
            std::string text = "{";
            for (int i = 0; i < count; ++i) {
                text += "\"key" + std::to_string(i) + "\": {\"inner\": " + std::to_string(i) + "}, ";
            }
            EXPECT_EQ(parse(text + "\"last\": 0}").size(), static_cast<std::size_t>(count) + 1);
            const std::string message = parse_error(text + "\"key" + std::to_string(repeated) + "\": 1}");
            EXPECT_NE(message.find("duplicate key 'key" + std::to_string(repeated) + "'"), std::string::npos)
                << count << " keys: " << message;
        }
    }
}

TEST(Json, AccessorErrorsNameTheKeyPath) {
    const JsonValue root =
        parse_json(R"({"n_head": "16", "attn_config": {"clip_qkv": [1]}, "shape": [1, "x"]})", "config.json");
    EXPECT_EQ(error_message([&] { root.at("n_head").as_int64(); }),
              "config.json: n_head: expected an integer, got string");
    EXPECT_EQ(error_message([&] { root.at("attn_config").at("clip_qkv").as_double(); }),
              "config.json: attn_config.clip_qkv: expected a number, got array");
    EXPECT_EQ(error_message([&] { root.at("shape").at(std::size_t{1}).as_uint64(); }),
              "config.json: shape[1]: expected an integer, got string");
    EXPECT_EQ(error_message([&] { root.at("vocab_size"); }), "config.json: missing key 'vocab_size'");
    EXPECT_EQ(error_message([&] { root.at("attn_config").at("alibi"); }),
              "config.json: attn_config: missing key 'alibi'");
    EXPECT_EQ(error_message([&] { root.at("shape").at(std::size_t{5}); }),
              "config.json: shape: index 5 is out of range for an array of 2 elements");
    EXPECT_EQ(error_message([&] { root.as_array(); }), "config.json: expected an array, got object");
    EXPECT_EQ(error_message([&] { root.at("n_head").as_bool(); }),
              "config.json: n_head: expected a boolean, got string");
    EXPECT_EQ(error_message([&] { root.at("n_head").find("x"); }),
              "config.json: n_head: expected an object, got string");
    EXPECT_EQ(error_message([&] { parse("true").as_string(); }), "test.json: expected a string, got true");
}

TEST(Json, LimitsNesting) {
    const std::string ok = std::string(vkf::kJsonMaxDepth, '[') + std::string(vkf::kJsonMaxDepth, ']');
    EXPECT_EQ(parse(ok).size(), 1u);
    const std::string too_deep = "[" + ok + "]";
    EXPECT_NE(parse_error(too_deep).find("nesting deeper than 128"), std::string::npos);
    // Far beyond any stack: refused, not a crash.
    EXPECT_THROW(parse(std::string(1'000'000, '[')), vkf::Error);
    EXPECT_THROW(parse(std::string(500'000, '{') + "\"a\":"), vkf::Error);
    EXPECT_THROW(parse_json("[[1]]", "x", 1), vkf::Error);
    EXPECT_EQ(parse_json("[[1]]", "x", 2).size(), 1u);
}

TEST(Json, CopiesKeepTheirLocation) {
    JsonValue copy;
    {
        const JsonValue root = parse(R"({"a": {"b": "text"}})");
        copy = root.at("a");
    }
    EXPECT_EQ(error_message([&] { copy.at("b").as_int64(); }), "test.json: a.b: expected an integer, got string");
    const JsonValue moved = std::move(copy);
    EXPECT_EQ(moved.at("b").as_string(), "text");
}

TEST(Json, ReadsWhatTheWriterWrites) {
    const nlohmann::ordered_json doc = {{"name", "\xce\xbb \"quoted\"\n\x01"},
                                        {"count", std::uint64_t{18446744073709551615ull}},
                                        {"neg", std::int64_t{-5}},
                                        {"ratio", 0.1},
                                        {"flag", true},
                                        {"list", {1, nullptr, nlohmann::ordered_json::object()}}};
    const JsonValue root = parse(vkf::json_text(doc));
    EXPECT_EQ(root.at("name").as_string(), "\xce\xbb \"quoted\"\n\x01");
    EXPECT_EQ(root.at("count").as_uint64(), 18446744073709551615ull);
    EXPECT_EQ(root.at("neg").as_int64(), -5);
    EXPECT_EQ(root.at("ratio").as_double(), 0.1);
    EXPECT_TRUE(root.at("flag").as_bool());
    EXPECT_TRUE(root.at("list").at(std::size_t{1}).is_null());
}

// Random mutations of a realistic document and random bytes: each input must either parse
// or throw vkf::Error. Under the sanitizer build this also checks memory safety.
TEST(Json, FuzzedInputNeverCrashes) {
    const std::string seed_document = R"({"architectures": ["BloomForCausalLM"], "n_head": 16,
        "layer_norm_epsilon": 1e-05, "name": "caf\u00e9 \ud83d\ude00", "nested": {"a": [1, -2.5e3, true, null]}})";
    const std::string alphabet = "{}[]\":,.-+eE0123456789 \\ut\nrfalsnx\x80\xc3\xa9\xed\xf0";
    std::mt19937_64 rng(1234);
    std::size_t parsed = 0, refused = 0;
    for (int iteration = 0; iteration < 20000; ++iteration) {
        std::string text = seed_document;
        const int edits = 1 + static_cast<int>(rng() % 4);
        for (int e = 0; e < edits; ++e) {
            const std::size_t pos = rng() % (text.size() + 1);
            switch (rng() % 4) {
                case 0:
                    if (!text.empty()) {
                        text.erase(std::min(pos, text.size() - 1), 1);
                    }
                    break;
                case 1:
                    text.insert(pos, 1, alphabet[rng() % alphabet.size()]);
                    break;
                case 2:
                    if (!text.empty()) {
                        text[std::min(pos, text.size() - 1)] = static_cast<char>(rng() & 0xff);
                    }
                    break;
                default:
                    text = text.substr(0, pos);
                    break;
            }
        }
        try {
            const JsonValue value = parse(text);
            (void)value.kind();
            ++parsed;
        } catch (const vkf::Error&) {
            ++refused;
        }
    }
    EXPECT_GT(parsed, 0u);
    EXPECT_GT(refused, 0u);
    for (int iteration = 0; iteration < 5000; ++iteration) {
        std::string text(rng() % 64, '\0');
        for (char& c : text) {
            c = alphabet[rng() % alphabet.size()];
        }
        try {
            parse(text);
        } catch (const vkf::Error&) {
        }
    }
}

}  // namespace
