#include "apps/server/request_body.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <memory>

namespace vkf::server {
namespace {

// A chunk-size line is hex digits and perhaps extensions (";name=value"), which the server
// ignores: 256 bytes is far beyond any real one and keeps a line of junk from growing.
constexpr std::size_t kMaxChunkLine = 256;

serve::ApiError bad_chunked(const std::string& what) {
    return serve::invalid_request(fmt::format("the chunked request body is malformed: {}", what), std::nullopt,
                                  "invalid_body");
}

serve::ApiError inflated_too_large(std::uint64_t limit) {
    return {413, "invalid_request_error",
            fmt::format("the request body inflates (Content-Encoding) past the server's limit of {} bytes (--max-body)",
                        limit),
            std::nullopt, "request_too_large"};
}

std::string lower_trimmed(const std::string& text) {
    const auto first = text.find_first_not_of(" \t");
    const auto last = text.find_last_not_of(" \t");
    std::string out = first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

}  // namespace

void ChunkedDecoder::take_size_line() {
    const std::string size_text = line_.substr(0, line_.find(';'));
    std::uint64_t size = 0;
    std::size_t digits = 0;
    for (const char c : size_text) {
        if (c == ' ' || c == '\t') {
            continue;
        }
        const int digit =
            std::isxdigit(static_cast<unsigned char>(c)) == 0
                ? -1
                : (std::isdigit(static_cast<unsigned char>(c)) != 0 ? c - '0' : std::tolower(c) - 'a' + 10);
        if (digit < 0 || size > (limit_ + 1) / 16 + 1) {
            // Not hex, or a size far past the limit (which also keeps `size` from overflowing).
            if (digit < 0) {
                throw bad_chunked(fmt::format("'{}' is not a chunk size", size_text));
            }
            throw serve::body_too_large(limit_);
        }
        size = size * 16 + static_cast<std::uint64_t>(digit);
        ++digits;
    }
    if (digits == 0) {
        throw bad_chunked(fmt::format("'{}' is not a chunk size", size_text));
    }
    remaining_ = size;
    state_ = size == 0 ? State::Trailer : State::Data;
}

std::size_t ChunkedDecoder::feed(std::string_view in, std::string& out) {
    std::size_t used = 0;
    while (used < in.size() && state_ != State::Done) {
        if (state_ == State::Data) {
            const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, in.size() - used));
            out.append(in.substr(used, n));
            used += n;
            remaining_ -= n;
            if (remaining_ == 0) {
                state_ = State::DataEnd;
            }
            continue;
        }
        // Size, DataEnd and Trailer read lines.
        const char c = in[used++];
        if (c != '\n') {
            if (line_.size() >= kMaxChunkLine) {
                throw bad_chunked(fmt::format("a line of more than {} bytes", kMaxChunkLine));
            }
            line_.push_back(c);
            continue;
        }
        if (!line_.empty() && line_.back() == '\r') {
            line_.pop_back();
        }
        if (state_ == State::Size) {
            take_size_line();
            // Refused before its data is read: the rest of the body never enters memory.
            if (out.size() + remaining_ > limit_) {
                throw serve::body_too_large(limit_);
            }
        } else if (state_ == State::DataEnd) {
            if (!line_.empty()) {
                throw bad_chunked("a chunk's data is longer than its size says");
            }
            state_ = State::Size;
        } else if (line_.empty()) {
            state_ = State::Done;  // the blank line that ends the trailer
        }
        line_.clear();
    }
    return used;
}

ContentCoding parse_content_coding(const std::string& header) {
    const std::string coding = lower_trimmed(header);
    if (coding.empty() || coding == "identity") {
        return ContentCoding::None;
    }
    if (coding == "gzip" || coding == "x-gzip" || coding == "deflate") {
        return ContentCoding::Zlib;
    }
    throw serve::ApiError(415, "invalid_request_error",
                          fmt::format("Content-Encoding '{}' is not accepted: send the body as it is, or as gzip or "
                                      "deflate",
                                      header),
                          std::nullopt, "unsupported_content_encoding");
}

std::string inflate_body(std::string_view compressed, std::uint64_t limit) {
    z_stream z{};
    // 15 + 32: the largest window, and either a gzip or a zlib header (what "deflate" means in HTTP).
    if (inflateInit2(&z, 15 + 32) != Z_OK) {
        throw serve::server_error("zlib could not start inflating");
    }
    const std::unique_ptr<z_stream, int (*)(z_stream*)> owner(&z, inflateEnd);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
    z.avail_in = static_cast<uInt>(compressed.size());
    std::string out;
    char piece[16384];
    int status = Z_OK;
    while (status != Z_STREAM_END) {
        z.next_out = reinterpret_cast<Bytef*>(piece);
        z.avail_out = sizeof(piece);
        status = inflate(&z, Z_NO_FLUSH);
        if (status != Z_OK && status != Z_STREAM_END) {
            const bool truncated = status == Z_BUF_ERROR;
            throw serve::invalid_request(
                fmt::format("the request body is not valid gzip or deflate data ({})",
                            truncated ? "it ends too early" : (z.msg != nullptr ? z.msg : "zlib error")),
                std::nullopt, "invalid_body");
        }
        const std::size_t produced = sizeof(piece) - z.avail_out;
        if (out.size() + produced > limit) {
            throw inflated_too_large(limit);
        }
        out.append(piece, produced);
    }
    if (z.avail_in != 0) {
        throw serve::invalid_request("the request body has bytes after its gzip or deflate data", std::nullopt,
                                     "invalid_body");
    }
    return out;
}

}  // namespace vkf::server
