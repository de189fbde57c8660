#pragma once
// A request body's codings undone under a byte limit: the chunked transfer coding and the
// gzip and deflate content codings. vkf-server undoes them itself (apps/server/guarded_server.hpp)
// because cpp-httplib 0.11.4 reads a chunked body and inflates a compressed one without any
// limit: a 300 MB chunked body, or 510 KB of gzip inflating to 500 MB, went into memory whole.
// Both stop as soon as the decoded bytes pass the limit; every failure is a serve::ApiError
// (413 over the limit, 400 for bad framing or data, 415 for a coding not accepted).

#include "host/serve/api_error.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vkf::server {

// `Transfer-Encoding: chunked`, decoded as the bytes come: feed() takes what has arrived and
// appends the chunks' data to `out`, throwing 413 before a chunk would take `out` past `limit`
// (so the rest is never read) and 400 for framing that is not chunked coding.
class ChunkedDecoder {
public:
    explicit ChunkedDecoder(std::uint64_t limit) : limit_(limit) {}
    // How many bytes of `in` belong to the body; the bytes after them (a pipelined request)
    // are left. done() once the last chunk and the trailer are in.
    std::size_t feed(std::string_view in, std::string& out);
    bool done() const { return state_ == State::Done; }

private:
    enum class State { Size, Data, DataEnd, Trailer, Done };
    void take_size_line();
    std::uint64_t limit_;
    State state_ = State::Size;
    std::string line_;             // the size or trailer line being read
    std::uint64_t remaining_ = 0;  // data bytes left in the current chunk
};

// The body's Content-Encoding as the server takes it: none (absent or identity), or one zlib
// inflates (gzip, x-gzip, deflate). Throws 415 naming any other coding (br, zstd, a list).
enum class ContentCoding { None, Zlib };
ContentCoding parse_content_coding(const std::string& header);

// `compressed` (a gzip or zlib stream) inflated, throwing 413 as soon as the output passes
// `limit` bytes and 400 for data that is not such a stream or is cut short.
std::string inflate_body(std::string_view compressed, std::uint64_t limit);

}  // namespace vkf::server
