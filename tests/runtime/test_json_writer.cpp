// JsonWriter: exact output in both styles, string escaping (control characters, invalid
// UTF-8), numbers that read back exactly, and every kind of misuse it must refuse. Plus
// the device-info writers built on it, which must always produce a complete document.

#include "runtime/device_info_json.hpp"
#include "runtime/error.hpp"
#include "runtime/json_writer.hpp"

#include <gtest/gtest.h>

#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>

namespace vkf {
namespace {

// One compact value, as text.
template <class T>
std::string compact(const T& v) {
    std::ostringstream out;
    JsonWriter json(out, JsonStyle::Compact);
    json.value(v);
    json.finish();
    return out.str();
}

TEST(JsonWriter, CompactNesting) {
    std::ostringstream out;
    JsonWriter json(out, JsonStyle::Compact);
    json.begin_object()
        .field("a", 1)
        .key("b")
        .begin_array()
        .value(true)
        .value(false)
        .null()
        .begin_object()
        .end_object()
        .begin_array()
        .end_array()
        .end_array()
        .key("c")
        .begin_object()
        .field("d", "e")
        .end_object()
        .end_object();
    json.finish();
    EXPECT_EQ(out.str(), R"({"a":1,"b":[true,false,null,{},[]],"c":{"d":"e"}})");
}

TEST(JsonWriter, PrettyIndentsByTwoSpaces) {
    std::ostringstream out;
    JsonWriter json(out);
    json.begin_object().field("name", "x").key("list").begin_array().value(1).begin_object().field("k", nullptr);
    json.end_object().end_array().key("empty").begin_object().end_object().key("none").begin_array().end_array();
    json.end_object();
    json.finish();
    EXPECT_EQ(out.str(), "{\n"
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
    std::ostringstream out;
    JsonWriter json(out);
    json.begin_array().end_array();
    EXPECT_TRUE(json.complete());
    EXPECT_EQ(out.str(), "[]");
}

TEST(JsonWriter, EscapesQuotesBackslashesAndControlCharacters) {
    EXPECT_EQ(compact("a\"b\\c/d"), R"("a\"b\\c/d")");
    EXPECT_EQ(compact("\b\f\n\r\t"), R"("\b\f\n\r\t")");
    EXPECT_EQ(compact("\x01\x1f\x7f"), R"("\u0001\u001f\u007f")");
    // An embedded NUL is part of the string, not its end.
    EXPECT_EQ(compact(std::string_view("a\0b", 3)), R"("a\u0000b")");
    // Keys are strings too.
    std::ostringstream out;
    JsonWriter json(out, JsonStyle::Compact);
    json.begin_object().field("k\"\n", 1).end_object();
    EXPECT_EQ(out.str(), R"({"k\"\n":1})");
}

TEST(JsonWriter, KeepsValidUtf8AndReplacesInvalidBytes) {
    // é (2 bytes), € (3 bytes), U+1F600 (4 bytes) pass through unchanged.
    EXPECT_EQ(compact("\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "\"\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"");
    const std::string fffd = "\xEF\xBF\xBD";
    EXPECT_EQ(compact("a\x80" "b"), "\"a" + fffd + "b\"");          // lone continuation byte
    EXPECT_EQ(compact("a\xC3"), "\"a" + fffd + "\"");                // truncated at the end
    EXPECT_EQ(compact("\xC3\x41"), "\"" + fffd + "A\"");             // truncated before ASCII
    EXPECT_EQ(compact("\xC0\xAF"), "\"" + fffd + fffd + "\"");       // overlong '/'
    EXPECT_EQ(compact("\xED\xA0\x80"), "\"" + fffd + fffd + fffd + "\""); // UTF-16 surrogate
    EXPECT_EQ(compact("\xF4\x90\x80\x80").substr(0, 4), "\"" + fffd);     // above U+10FFFF
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
    EXPECT_EQ(compact(2.0), "2");
    EXPECT_EQ(compact(-0.0), "-0");
    EXPECT_EQ(compact(1e300), "1e+300");

    std::mt19937_64 rng(12345);
    std::vector<double> values = {1.0 / 3.0, 5e-324, DBL_MIN, DBL_MAX, -DBL_MAX, 123456789.125, 0.1f, 1e-7, 6.02214076e23};
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
    std::ostringstream out;
    JsonWriter json(out, JsonStyle::Compact);
    json.begin_array().value(std::nan("")).value(1.0).end_array();
    EXPECT_EQ(out.str(), "[null,1]");
}

// Each misuse throws vkf::Error whose message says what was wrong.
template <class Fn>
void expect_misuse(Fn&& fn, const std::string& needle) {
    std::ostringstream out;
    JsonWriter json(out);
    try {
        fn(json);
        ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

TEST(JsonWriter, RefusesMisuse) {
    expect_misuse([](JsonWriter& j) { j.begin_object().value(1); }, "without a key");
    expect_misuse([](JsonWriter& j) { j.begin_object().begin_array(); }, "without a key");
    expect_misuse([](JsonWriter& j) { j.begin_object().field("a", 1).null(); }, "without a key");
    expect_misuse([](JsonWriter& j) { j.key("a"); }, "outside an object");
    expect_misuse([](JsonWriter& j) { j.begin_array().key("a"); }, "outside an object");
    expect_misuse([](JsonWriter& j) { j.begin_object().key("a").key("b"); }, "follows another key");
    expect_misuse([](JsonWriter& j) { j.begin_object().key("a").end_object(); }, "key without a value");
    expect_misuse([](JsonWriter& j) { j.end_object(); }, "without a matching begin");
    expect_misuse([](JsonWriter& j) { j.end_array(); }, "without a matching begin");
    expect_misuse([](JsonWriter& j) { j.begin_array().end_object(); }, "closes an array");
    expect_misuse([](JsonWriter& j) { j.begin_object().end_array(); }, "closes an object");
    expect_misuse([](JsonWriter& j) { j.begin_array().end_array().end_array(); }, "without a matching begin");
    expect_misuse([](JsonWriter& j) { j.value(1).value(2); }, "after the complete top-level value");
    expect_misuse([](JsonWriter& j) { j.begin_object().end_object().begin_object(); },
                  "after the complete top-level value");
}

TEST(JsonWriter, FinishRefusesIncompleteDocuments) {
    expect_misuse([](JsonWriter& j) { j.finish(); }, "empty");
    expect_misuse([](JsonWriter& j) { j.begin_object().field("a", 1).finish(); }, "unclosed object");
    expect_misuse([](JsonWriter& j) { j.begin_object().key("a").begin_array().finish(); }, "unclosed array");
    std::ostringstream out;
    JsonWriter json(out);
    json.begin_object();
    EXPECT_FALSE(json.complete());
    json.end_object();
    EXPECT_TRUE(json.complete());
    EXPECT_NO_THROW(json.finish());
}

TEST(JsonWriter, FinishReportsAFailedStream) {
    std::ostringstream out;
    JsonWriter json(out);
    json.value(1);
    out.setstate(std::ios::badbit);
    EXPECT_THROW(json.finish(), Error);
}

TEST(DeviceInfoJson, WritesCompleteObjectsAndMarksAMissingQueueFamily) {
    DeviceInfo info;
    info.name = "Test \"GPU\"";
    info.api_version = VK_MAKE_API_VERSION(0, 1, 3, 230);
    info.device_uuid[0] = 0xab;
    info.compute_queue_family = UINT32_MAX;
    info.memory_heaps = {MemoryHeapInfo{.size = 1ull << 33, .device_local = true}};
    std::ostringstream out;
    JsonWriter json(out, JsonStyle::Compact);
    json.begin_array();
    write_json(json, info);
    write_json(json, ComputeLimits{});
    write_json(json, DriverQuirks{.avoid_fp16_arithmetic = true, .reasons = {"why"}});
    json.end_array();
    ASSERT_NO_THROW(json.finish());
    const std::string s = out.str();
    EXPECT_NE(s.find(R"("name":"Test \"GPU\"")"), std::string::npos) << s;
    EXPECT_NE(s.find(R"("api_version":"1.3.230","api_version_raw":4206822)"), std::string::npos) << s;
    EXPECT_NE(s.find(R"("device_uuid":"ab000000000000000000000000000000")"), std::string::npos) << s;
    EXPECT_NE(s.find(R"("memory_heaps":[{"size":8589934592,"device_local":true,"host_visible":false}])"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find(R"("compute_queue_family":null)"), std::string::npos) << s;
    EXPECT_NE(s.find(R"("avoid_fp16_arithmetic":true,"avoid_subgroup_ops":false,"reasons":["why"])"),
              std::string::npos)
        << s;
}

} // namespace
} // namespace vkf
