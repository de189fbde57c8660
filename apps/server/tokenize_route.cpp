#include "apps/server/tokenize_route.hpp"

#include "base/error.hpp"
#include "host/serve/api_error.hpp"
#include "host/serve/tokenize_request.hpp"
#include "host/text/utf8.hpp"

#include <fmt/format.h>

#include <array>
#include <string>

namespace vkf::server {

using json = nlohmann::ordered_json;

namespace {

const text::Tokenizer& served_tokenizer(const Served& served) {
    if (served.decoder) {
        return *served.decoder->tokenizer;
    }
    if (served.encoder != nullptr) {
        return *served.encoder->tokenizer;
    }
    throw serve::server_error("this server has no model to tokenize for");
}

// llama-server's piece: the token's text, or its bytes when they are not UTF-8 on their own
// (a character split over two tokens).
json piece(const text::Tokenizer& tokenizer, std::uint32_t id) {
    const std::array<std::uint32_t, 1> one{id};
    const std::string bytes = tokenizer.decode_bytes(one);
    if (text::find_invalid_utf8(bytes) == std::string::npos) {
        return bytes;
    }
    json list = json::array();
    for (const char c : bytes) {
        list.push_back(static_cast<unsigned char>(c));
    }
    return list;
}

}  // namespace

void tokenize(const Served& served, const httplib::Request& req, httplib::Response& res) {
    const serve::TokenizeRequest r = serve::parse_tokenize_request(req.body, served.settings.limits);
    const text::Tokenizer& tokenizer = served_tokenizer(served);
    std::vector<std::uint32_t> ids;
    try {
        ids = tokenizer.encode(r.content, r.add_special);
    } catch (const Error& e) {
        throw serve::invalid_request(fmt::format("content: {}", e.what()), "content");
    }
    json tokens = json::array();
    for (const std::uint32_t id : ids) {
        if (r.with_pieces) {
            tokens.push_back({{"id", id}, {"piece", piece(tokenizer, id)}});
        } else {
            tokens.push_back(id);
        }
    }
    send_json(res, 200, {{"tokens", std::move(tokens)}});
}

void detokenize(const Served& served, const httplib::Request& req, httplib::Response& res) {
    const serve::DetokenizeRequest r = serve::parse_detokenize_request(req.body, served.settings.limits);
    const text::Tokenizer& tokenizer = served_tokenizer(served);
    for (std::size_t i = 0; i < r.ids.size(); ++i) {
        if (r.ids[i] >= tokenizer.vocab_size()) {
            throw serve::invalid_request(fmt::format("tokens[{}] is {}, outside the vocabulary of {} tokens", i,
                                                     r.ids[i], tokenizer.vocab_size()),
                                         "tokens");
        }
    }
    std::string content;
    try {
        content = tokenizer.decode(r.ids);
    } catch (const Error& e) {  // an id in a gap of the vocabulary's ids
        throw serve::invalid_request(fmt::format("tokens: {}", e.what()), "tokens");
    }
    send_json(res, 200, {{"content", std::move(content)}});
}

}  // namespace vkf::server
