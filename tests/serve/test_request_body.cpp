// apps/server/request_body: the chunked coding decoded in any split of its bytes and refused at
// the limit before the chunk that passes it; gzip and deflate inflated under the limit; the
// codings not accepted refused by name. (vkf-server end to end: tests/serve/server_test.py.)

#include "apps/server/request_body.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

namespace vkf::server {
namespace {

int status_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const serve::ApiError& e) {
        return e.status();
    }
    return 0;
}

// Feeds `wire` in pieces of `piece` bytes; the decoded body and how many bytes were used.
std::pair<std::string, std::size_t> decode(const std::string& wire, std::size_t piece, std::uint64_t limit) {
    ChunkedDecoder decoder(limit);
    std::string out;
    std::size_t used = 0;
    while (used < wire.size() && !decoder.done()) {
        const std::string_view part = std::string_view(wire).substr(used, piece);
        const std::size_t n = decoder.feed(part, out);
        used += n;
        if (n < part.size()) {
            break;
        }
    }
    EXPECT_TRUE(decoder.done());
    return {out, used};
}

std::string compressed(const std::string& text, int window_bits) {
    z_stream z{};
    EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
    std::string out(deflateBound(&z, static_cast<uLong>(text.size())), '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    z.avail_in = static_cast<uInt>(text.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

TEST(ChunkedDecoder, DecodesInAnySplitAndLeavesWhatFollows) {
    const std::string wire = "5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: y\r\n\r\nGET / HTTP/1.1\r\n";
    for (const std::size_t piece : {1, 2, 3, 7, 64}) {
        const auto [body, used] = decode(wire, piece, 100);
        EXPECT_EQ(body, "hello, world") << piece;
        EXPECT_EQ(wire.substr(used), "GET / HTTP/1.1\r\n") << piece;
    }
}

TEST(ChunkedDecoder, RefusesAtTheLimitBeforeTheChunkIsRead) {
    ChunkedDecoder decoder(8);
    std::string out;
    EXPECT_EQ(decoder.feed("5\r\nhello\r\n", out), 10u);
    // The size line alone is refused: the chunk's data need never arrive.
    EXPECT_EQ(status_of([&] { decoder.feed("4\r\n", out); }), 413);
    EXPECT_EQ(out, "hello");
    ChunkedDecoder huge(1 << 20);
    EXPECT_EQ(status_of([&] { huge.feed("ffffffffffffffffffffffff\r\n", out); }), 413);
}

TEST(ChunkedDecoder, RefusesBadFraming) {
    std::string out;
    EXPECT_EQ(status_of([&] { ChunkedDecoder(100).feed("zz\r\n", out); }), 400);
    EXPECT_EQ(status_of([&] { ChunkedDecoder(100).feed("\r\n", out); }), 400);
    EXPECT_EQ(status_of([&] { ChunkedDecoder(100).feed("2\r\nabc\r\n", out); }), 400);
    EXPECT_EQ(status_of([&] { ChunkedDecoder(100).feed(std::string(300, '1'), out); }), 400);
}

TEST(ContentCoding, AcceptsIdentityGzipAndDeflateOnly) {
    EXPECT_EQ(parse_content_coding(""), ContentCoding::None);
    EXPECT_EQ(parse_content_coding(" Identity "), ContentCoding::None);
    EXPECT_EQ(parse_content_coding("GZIP"), ContentCoding::Zlib);
    EXPECT_EQ(parse_content_coding("deflate"), ContentCoding::Zlib);
    for (const char* coding : {"br", "zstd", "gzip, gzip", "compress"}) {
        try {
            parse_content_coding(coding);
            ADD_FAILURE() << coding;
        } catch (const serve::ApiError& e) {
            EXPECT_EQ(e.status(), 415);
            EXPECT_NE(std::string(e.what()).find(coding), std::string::npos) << e.what();
        }
    }
}

TEST(InflateBody, InflatesGzipAndZlibUnderTheLimit) {
    const std::string text(100000, 'a');
    EXPECT_EQ(inflate_body(compressed(text, 15 + 16), 100000), text);  // gzip
    EXPECT_EQ(inflate_body(compressed(text, 15), 100000), text);       // zlib ("deflate")
}

TEST(InflateBody, StopsAtTheLimitAndRefusesBadData) {
    const std::string bomb = compressed(std::string(50 << 20, '\0'), 15 + 16);
    ASSERT_LT(bomb.size(), 100000u);
    try {
        inflate_body(bomb, 65536);
        ADD_FAILURE() << "a gzip bomb inflated";
    } catch (const serve::ApiError& e) {
        EXPECT_EQ(e.status(), 413);
        EXPECT_NE(std::string(e.what()).find("65536 bytes"), std::string::npos) << e.what();
    }
    const std::string whole = compressed("hello", 15 + 16);
    EXPECT_EQ(status_of([&] { inflate_body(whole.substr(0, whole.size() - 4), 100); }), 400);
    EXPECT_EQ(status_of([&] { inflate_body("not gzip at all", 100); }), 400);
    EXPECT_EQ(status_of([&] { inflate_body(whole + "junk", 100); }), 400);
}

}  // namespace
}  // namespace vkf::server
