// Stop strings over streamed text (host/text/stop_strings.hpp): whatever the split of the
// text into pieces, what is printed is the text up to the first stop string.

#include "host/text/stop_strings.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vkf::text {
namespace {

// Feeds `text` in pieces cut at `cuts`; returns what was handed out and whether it stopped.
std::pair<std::string, bool> stream(const std::vector<std::string>& stops, const std::string& text,
                                    const std::vector<std::size_t>& cuts) {
    StopStrings s(stops);
    std::string out;
    std::size_t at = 0;
    for (const std::size_t cut : cuts) {
        const StopStrings::Piece p = s.push(std::string_view(text).substr(at, cut - at));
        out += p.text;
        at = cut;
        if (p.stopped) {
            return {out, true};
        }
    }
    const StopStrings::Piece p = s.push(std::string_view(text).substr(at));
    out += p.text;
    if (p.stopped) {
        return {out, true};
    }
    return {out + s.finish(), false};
}

TEST(StopStrings, EverySplitGivesTheTextBeforeTheFirstStop) {
    const std::string text = "Then said Jesus, Verily, verily, I say unto you. \xE4\xB8\xAD\xE6\x96\x87 end";
    const std::vector<std::string> stops = {"verily, I", "unto", "\xE6\x96\x87"};
    const std::string expected = text.substr(0, text.find("verily, I"));
    for (std::size_t a = 0; a <= text.size(); ++a) {
        for (std::size_t b = a; b <= text.size(); b += 3) {
            const auto [out, stopped] = stream(stops, text, {a, b});
            ASSERT_TRUE(stopped) << a << " " << b;
            ASSERT_EQ(out, expected) << a << " " << b;
        }
    }
}

TEST(StopStrings, HoldsBackOnlyWhatCouldStartAStop) {
    StopStrings s({"</s>"});
    EXPECT_EQ(s.push("the end<").text, "the end") << "'<' may begin </s>";
    EXPECT_EQ(s.push("b").text, "<b") << "'<b' cannot";
    EXPECT_EQ(s.push("</").text, "");
    EXPECT_EQ(s.finish(), "</") << "at the end nothing is held";
}

TEST(StopStrings, NoStopsPassEverythingAndEmptyOnesAreIgnored) {
    const std::string text = "In the beginning God created the heaven and the earth.";
    EXPECT_EQ(stream({}, text, {5, 20}), std::make_pair(text, false));
    EXPECT_EQ(stream({""}, text, {5, 20}), std::make_pair(text, false));
    EXPECT_EQ(stream({"xyz"}, text, {}), std::make_pair(text, false));
    // After a stop nothing more comes out.
    StopStrings s({"God"});
    EXPECT_TRUE(s.push("In the beginning God created").stopped);
    EXPECT_EQ(s.push("more").text, "");
    EXPECT_FALSE(s.push("more").stopped);
    EXPECT_EQ(s.finish(), "");
}

}  // namespace
}  // namespace vkf::text
