// The one token-to-text sink (host/text/token_text_sink.hpp) that the C API, vkf-server and the
// programs share: whole characters only, stop strings held back and cut off, cancellation.
// Ids of tests/text/data/byte_bpe.json, where byte b is id b: one token per byte splits every
// character and every stop string as finely as a model can.

#include "base/error.hpp"
#include "host/text/token_text_sink.hpp"
#include "host/text/utf8.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace vkf::text {
namespace {

const Tokenizer& byte_tokenizer() {
    static const Tokenizer t = Tokenizer::load(std::string(VKF_TEXT_DATA) + "/byte_bpe.json");
    return t;
}

std::vector<TokenId> byte_ids(std::string_view text) {
    std::vector<TokenId> ids;
    for (const char c : text) {
        ids.push_back(static_cast<unsigned char>(c));
    }
    return ids;
}

// What a generation of `ids` hands out through a sink: each push's piece (checked to be whole
// UTF-8) until the sink says stop, then finish's.
struct Streamed {
    std::vector<std::string> pieces;
    std::string finished;
    std::size_t pushed = 0;
    bool stopped = false;
    std::string all() const {
        std::string out;
        for (const std::string& p : pieces) {
            out += p;
        }
        return out + finished;
    }
};

Streamed stream(const std::vector<TokenId>& ids, std::vector<std::string> stops) {
    TokenTextSink sink(&byte_tokenizer(), {.stops = std::move(stops)});
    Streamed r;
    for (const TokenId id : ids) {
        r.pieces.push_back(sink.push(id));
        ++r.pushed;
        EXPECT_EQ(complete_utf8_prefix(r.pieces.back()), r.pieces.back().size()) << "a partial character went out";
        EXPECT_EQ(find_invalid_utf8(r.pieces.back()), std::string::npos);
        if (!sink.go_on()) {
            break;
        }
    }
    r.stopped = sink.stopped();
    r.finished = sink.finish();
    EXPECT_EQ(sink.text(), r.all()) << "text() is what was handed out";
    return r;
}

TEST(TokenTextSink, MultiByteCharactersSplitOverTokensComeWhole) {
    const std::string text = "Gen \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80 \xC3\xA9!";  // 日本 😀 é
    const Streamed r = stream(byte_ids(text), {});
    EXPECT_FALSE(r.stopped);
    EXPECT_EQ(r.all(), text);
    // 日 is E6 97 A5: nothing for its first two bytes, all of it with the third.
    EXPECT_EQ(r.pieces[4], "");
    EXPECT_EQ(r.pieces[5], "");
    EXPECT_EQ(r.pieces[6], "\xE6\x97\xA5");
    EXPECT_EQ(r.pieces[14], "\xF0\x9F\x98\x80");
    // A generation that ends inside a character: the bytes come out at the end as U+FFFD.
    const Streamed cut = stream(byte_ids("ab\xE6\x97"), {});
    EXPECT_EQ(cut.all(), "ab\xEF\xBF\xBD");
    EXPECT_EQ(cut.finished, "\xEF\xBF\xBD");
}

TEST(TokenTextSink, StopStringSplitOverTokensIsHeldBackThenCut) {
    const std::string text = "the end</s>And more";
    const Streamed r = stream(byte_ids(text), {"</s>"});
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.pushed, text.find("</s>") + 4) << "generation ends with the stop string's last token";
    EXPECT_EQ(r.all(), "the end");
    for (const std::string& p : r.pieces) {
        EXPECT_EQ(p.find('<'), std::string::npos) << "a piece of the stop string went out: " << p;
    }
    // A start that turns out not to be the stop string goes out once it is ruled out.
    const Streamed ruled_out = stream(byte_ids("a</b>c"), {"</s>"});
    EXPECT_FALSE(ruled_out.stopped);
    EXPECT_EQ(ruled_out.pieces[1], "");
    EXPECT_EQ(ruled_out.pieces[2], "");
    EXPECT_EQ(ruled_out.pieces[3], "</b");
    EXPECT_EQ(ruled_out.all(), "a</b>c");
    // A stop string of multi-byte characters, split inside them.
    const Streamed wide = stream(byte_ids("x\xE6\x97\xA5\xE6\x9C\xACy"), {"\xE6\x9C\xAC"});
    EXPECT_TRUE(wide.stopped);
    EXPECT_EQ(wide.all(), "x\xE6\x97\xA5");
}

TEST(TokenTextSink, StopStringAtTheVeryEnd) {
    // Completed by the generation's last token: stopped, nothing of it out, finish adds nothing.
    const Streamed last = stream(byte_ids("Amen.</s>"), {"</s>"});
    EXPECT_TRUE(last.stopped);
    EXPECT_EQ(last.all(), "Amen.");
    EXPECT_EQ(last.finished, "");
    // The generation ends (its length) inside a possible stop string: finish hands the held
    // tail out, since it never became the stop string.
    const Streamed held = stream(byte_ids("Amen.</"), {"</s>"});
    EXPECT_FALSE(held.stopped);
    EXPECT_EQ(held.finished, "</");
    EXPECT_EQ(held.all(), "Amen.</");
    // The stop string completed by what finish decodes: an incomplete character's U+FFFD.
    const Streamed replaced = stream(byte_ids("ok?\xE6\x97"), {"?\xEF\xBF\xBD"});
    EXPECT_EQ(replaced.all(), "ok");
}

TEST(TokenTextSink, SeveralStopStringsWithASharedPrefix) {
    const std::vector<std::string> stops = {"<|end|>", "<|endoftext|>", "<|e"};
    // "<|e" is the earliest to complete, and the prefix of the other two.
    EXPECT_EQ(stream(byte_ids("Hi<|endoftext|>"), stops).all(), "Hi");
    // Without it: "<|end" could begin either, "<|endo" only the second, which completes.
    const Streamed r = stream(byte_ids("Hi<|endoftext|>!"), {"<|end|>", "<|endoftext|>"});
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.all(), "Hi");
    EXPECT_EQ(r.pushed, 15u);
    // Neither completes: the held text goes out once both are ruled out.
    const Streamed neither = stream(byte_ids("Hi<|endo!"), {"<|end|>", "<|endoftext|>"});
    EXPECT_FALSE(neither.stopped);
    EXPECT_EQ(neither.pieces.back(), "<|endo!");
    EXPECT_EQ(neither.all(), "Hi<|endo!");
    // The one that completes first in the text wins, wherever it is in the list.
    EXPECT_EQ(stream(byte_ids("one two three"), {"three", "two t", "two"}).all(), "one ");
}

TEST(TokenTextSink, CancellationEndsGeneration) {
    std::atomic<bool> cancel = false;
    TokenTextSink sink(&byte_tokenizer(), {.cancel = &cancel});
    EXPECT_EQ(sink.push('a'), "a");
    EXPECT_TRUE(sink.go_on());
    // Set on another thread, as vkf_cancel_request and Session.cancel() do.
    std::thread([&] { cancel = true; }).join();
    EXPECT_FALSE(sink.go_on());
    EXPECT_TRUE(sink.cancelled());
    EXPECT_FALSE(sink.stopped()) << "cancelled, not stopped by a stop string";
    EXPECT_FALSE(sink.go_on()) << "once seen, it stays";
    // What was held back still comes out at the end.
    EXPECT_EQ(sink.push(0xE6), "");
    EXPECT_EQ(sink.finish(), "\xEF\xBF\xBD");
    EXPECT_EQ(sink.text(), "a\xEF\xBF\xBD");
}

TEST(TokenTextSink, WithoutATokenizerOnlyIdsAndNoStopStrings) {
    TokenTextSink sink(nullptr, {});
    EXPECT_EQ(sink.push('a'), "");
    EXPECT_TRUE(sink.go_on());
    EXPECT_EQ(sink.finish(), "");
    try {
        TokenTextSink refused(nullptr, {.stops = {"x"}});
        ADD_FAILURE() << "stop strings without a tokenizer were accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("stop strings need a tokenizer"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace vkf::text
