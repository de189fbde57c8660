// The submission timeout's text and range (runtime/timeout.hpp): VKF_TIMEOUT_MS is a whole
// decimal number of milliseconds or an error naming the variable and the value; no prefix
// parse ("10abc" was 10 ms), no exponent ("1e9" was 1 ms), no wrap-around in the conversion
// to nanoseconds (18446744073710 ms was a 448 us timeout).

#include "base/error.hpp"
#include "runtime/env_flag.hpp"
#include "runtime/timeout.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace vkf {
namespace {

using std::chrono::milliseconds;

// The message of the vkf::Error `parse_timeout_ms(text, source)` throws; "" when none.
std::string refusal(std::string_view text) {
    try {
        parse_timeout_ms(text, "VKF_TIMEOUT_MS");
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(Timeout, WholeMillisecondsParse) {
    EXPECT_EQ(parse_timeout_ms("1", "VKF_TIMEOUT_MS"), milliseconds(1));
    EXPECT_EQ(parse_timeout_ms("120000", "VKF_TIMEOUT_MS"), milliseconds(120000));
    EXPECT_EQ(parse_timeout_ms("007", "VKF_TIMEOUT_MS"), milliseconds(7));
    EXPECT_EQ(parse_timeout_ms(std::to_string(kMaxTimeout.count()), "VKF_TIMEOUT_MS"), kMaxTimeout);
}

TEST(Timeout, AnythingButDigitsIsRefusedByName) {
    for (const char* text : {"", " ", "10abc", "1e9", "1.5", "+5", "-5", " 5", "5 ", "0x10", "5ms", "١٢"}) {
        SCOPED_TRACE(text);
        const std::string message = refusal(text);
        EXPECT_NE(message.find("VKF_TIMEOUT_MS='" + std::string(text) + "'"), std::string::npos) << message;
        EXPECT_NE(message.find("not a whole number of milliseconds"), std::string::npos) << message;
    }
}

TEST(Timeout, ZeroAndValuesOverTheMaximumAreRefused) {
    const std::string too_big[] = {
        std::to_string(kMaxTimeout.count() + 1),
        "18446744073710",        // * 1e6 wrapped to 448 us in uint64 nanoseconds
        "9223372036855",         // * 1e6 overflows int64 nanoseconds
        "18446744073709551615",  // UINT64_MAX
        "18446744073709551616",  // one more: past what from_chars holds
        "99999999999999999999999999",
    };
    for (const std::string& text : too_big) {
        SCOPED_TRACE(text);
        const std::string message = refusal(text);
        EXPECT_NE(message.find("VKF_TIMEOUT_MS='" + text + "' is out of range"), std::string::npos) << message;
        EXPECT_NE(message.find(std::to_string(kMaxTimeout.count())), std::string::npos) << message;
    }
    EXPECT_NE(refusal("0").find("out of range"), std::string::npos);
    EXPECT_NE(refusal("000").find("out of range"), std::string::npos);
}

TEST(Timeout, TheMaximumConvertsToNanosecondsWithoutOverflow) {
    EXPECT_EQ(timeout_nanoseconds(milliseconds(1)), 1'000'000u);
    EXPECT_EQ(timeout_nanoseconds(kMaxTimeout), std::uint64_t{1'000'000'000} * 1'000'000u);
    EXPECT_LT(static_cast<double>(kMaxTimeout.count()) * 1e6,
              static_cast<double>(std::numeric_limits<std::int64_t>::max()));
}

TEST(Timeout, CheckedDurationsNameTheirSource) {
    EXPECT_NO_THROW(check_timeout(milliseconds(1), "ContextOptions::timeout"));
    EXPECT_NO_THROW(check_timeout(kMaxTimeout, "ContextOptions::timeout"));
    for (const milliseconds bad : {milliseconds(0), milliseconds(-1), kMaxTimeout + milliseconds(1),
                                   milliseconds(std::numeric_limits<std::int64_t>::max())}) {
        try {
            check_timeout(bad, "ContextOptions::timeout");
            ADD_FAILURE() << bad.count() << " ms was accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("ContextOptions::timeout of " + std::to_string(bad.count())),
                      std::string::npos)
                << e.what();
        }
    }
}

}  // namespace
}  // namespace vkf

// VKF_VALIDATION's spellings (issue 32): "yes" and "true" used to mean off, silently.
TEST(EnvFlag, UsualSpellingsAndNothingElse) {
    for (const char* on : {"1", "yes", "true", "on", "YES", "True", "ON"}) {
        EXPECT_TRUE(vkf::parse_env_flag(on, "VKF_VALIDATION")) << on;
    }
    for (const char* off : {"0", "no", "false", "off", "", "No", "FALSE"}) {
        EXPECT_FALSE(vkf::parse_env_flag(off, "VKF_VALIDATION")) << off;
    }
    for (const char* bad : {"2", "y", "enabled", " 1", "1 ", "-1", "truth"}) {
        try {
            vkf::parse_env_flag(bad, "VKF_VALIDATION");
            ADD_FAILURE() << bad << " was accepted";
        } catch (const vkf::Error& e) {
            EXPECT_NE(std::string(e.what()).find(std::string("VKF_VALIDATION='") + bad + "'"), std::string::npos)
                << e.what();
        }
    }
}
