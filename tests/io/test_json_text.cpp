// json_text (host/io/json.hpp), the one way vkformer writes JSON: exact output in both
// styles, string escaping (control characters, invalid UTF-8), and numbers that read back
// exactly.

#include "host/io/json.hpp"

#include <gtest/gtest.h>

#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace vkf {
namespace {

using Json = nlohmann::ordered_json;

std::string compact(const Json& v) {
    return json_text(v, JsonStyle::Compact);
}

TEST(JsonWriter, CompactNesting) {
    const Json doc = {{"a", 1}, {"b", {true, false, nullptr, Json::object(), Json::array()}}, {"c", {{"d", "e"}}}};
    EXPECT_EQ(compact(doc), R"({"a":1,"b":[true,false,null,{},[]],"c":{"d":"e"}})");
}

TEST(JsonWriter, PrettyIndentsByTwoSpaces) {
    const Json doc = {
        {"name", "x"}, {"list", {1, {{"k", nullptr}}}}, {"empty", Json::object()}, {"none", Json::array()}};
    EXPECT_EQ(json_text(doc),
              "{\n"
              "  \"name\": \"x\",\n"
              "  \"list\": [\n"
              "    1,\n"
              "    {\n"
              "      \"k\": null\n"
              "    }\n"
              "  ],\n"
              "  \"empty\": {},\n"
              "  \"none\": []\n"
              "}");
}

TEST(JsonWriter, TopLevelScalarsAndEmptyContainers) {
    EXPECT_EQ(compact("text"), "\"text\"");
    EXPECT_EQ(compact(true), "true");
    EXPECT_EQ(compact(nullptr), "null");
    EXPECT_EQ(compact(std::string("s")), "\"s\"");
    EXPECT_EQ(json_text(Json::array()), "[]");
}

TEST(JsonWriter, EscapesQuotesBackslashesAndControlCharacters) {
    EXPECT_EQ(compact("a\"b\\c/d"), R"("a\"b\\c/d")");
    EXPECT_EQ(compact("\b\f\n\r\t"), R"("\b\f\n\r\t")");
    EXPECT_EQ(compact("\x01\x1f"), R"("\u0001\u001f")");
    // An embedded NUL is part of the string, not its end.
    EXPECT_EQ(compact(std::string("a\0b", 3)), R"("a\u0000b")");
    // Keys are strings too.
    EXPECT_EQ(compact(Json{{"k\"\n", 1}}), R"({"k\"\n":1})");
}

TEST(JsonWriter, KeepsValidUtf8AndReplacesInvalidBytes) {
    // é (2 bytes), € (3 bytes), U+1F600 (4 bytes) pass through unchanged.
    EXPECT_EQ(compact("\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "\"\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"");
    const std::string fffd = "\xEF\xBF\xBD";
    EXPECT_EQ(compact("a\x80"
                      "b"),
              "\"a" + fffd + "b\"");                                       // lone continuation byte
    EXPECT_EQ(compact("a\xC3"), "\"a" + fffd + "\"");                      // truncated at the end
    EXPECT_EQ(compact("\xC3\x41"), "\"" + fffd + "A\"");                   // truncated before ASCII
    EXPECT_EQ(compact("\xC0\xAF"), "\"" + fffd + fffd + "\"");             // overlong '/'
    EXPECT_EQ(compact("\xED\xA0\x80"), "\"" + fffd + fffd + fffd + "\"");  // UTF-16 surrogate
    EXPECT_EQ(compact("\xF4\x90\x80\x80").substr(0, 4), "\"" + fffd);      // above U+10FFFF
    EXPECT_EQ(compact("\xFF"), "\"" + fffd + "\"");
}

TEST(JsonWriter, IntegersAreExactAt64Bits) {
    EXPECT_EQ(compact(0), "0");
    EXPECT_EQ(compact(-42), "-42");
    EXPECT_EQ(compact(std::numeric_limits<std::int64_t>::min()), "-9223372036854775808");
    EXPECT_EQ(compact(std::numeric_limits<std::int64_t>::max()), "9223372036854775807");
    EXPECT_EQ(compact(std::numeric_limits<std::uint64_t>::max()), "18446744073709551615");
    EXPECT_EQ(compact(std::uint8_t{255}), "255");
    EXPECT_EQ(compact(std::int8_t{-128}), "-128");
    EXPECT_EQ(compact(std::uint32_t{4294967295u}), "4294967295");
    EXPECT_EQ(compact(std::size_t{7}), "7");
}

TEST(JsonWriter, DoublesAreShortestAndReadBackExactly) {
    EXPECT_EQ(compact(0.1), "0.1");
    EXPECT_EQ(compact(1.5), "1.5");
    EXPECT_EQ(compact(2.0), "2.0");  // a double stays a double when read back
    EXPECT_EQ(compact(-0.0), "-0.0");
    EXPECT_EQ(compact(1e300), "1e+300");

    std::mt19937_64 rng(12345);
    std::vector<double> values = {1.0 / 3.0,     5e-324, DBL_MIN, DBL_MAX,      -DBL_MAX,
                                  123456789.125, 0.1f,   1e-7,    6.02214076e23};
    for (int i = 0; i < 2000; ++i) {
        // Random bit patterns cover every exponent; non-finite ones are skipped here.
        const std::uint64_t bits = rng();
        double d;
        std::memcpy(&d, &bits, sizeof(d));
        if (std::isfinite(d)) {
            values.push_back(d);
        }
    }
    for (const double d : values) {
        const std::string text = compact(d);
        double back = 0.0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), back);
        ASSERT_EQ(ec, std::errc()) << text;
        ASSERT_EQ(end, text.data() + text.size()) << text;
        EXPECT_EQ(std::memcmp(&back, &d, sizeof(d)), 0) << text;
    }
}

TEST(JsonWriter, NonFiniteDoublesBecomeNull) {
    EXPECT_EQ(compact(std::numeric_limits<double>::quiet_NaN()), "null");
    EXPECT_EQ(compact(std::numeric_limits<double>::infinity()), "null");
    EXPECT_EQ(compact(-std::numeric_limits<double>::infinity()), "null");
    EXPECT_EQ(compact(Json{std::nan(""), 1.0}), "[null,1.0]");
}

}  // namespace
}  // namespace vkf
