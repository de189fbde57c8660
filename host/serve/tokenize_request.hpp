#pragma once
// The bodies of POST /tokenize and /detokenize, in llama-server's shapes (its tools/server
// README): {"content", "add_special", "parse_special", "with_pieces"} and {"tokens"}. As the
// generation routes, every field is honoured or refused with a 400 naming it.

#include "host/serve/request.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::serve {

struct TokenizeRequest {
    std::string content;
    bool add_special = false;  // BOS/EOS as the tokenizer's post-processor adds them (llama-server's default: off)
    bool with_pieces = false;  // each id with its piece: text, or its bytes when they are not UTF-8
};

struct DetokenizeRequest {
    std::vector<std::uint32_t> ids;  // may be empty: its content is ""
};

TokenizeRequest parse_tokenize_request(std::string_view body, const RequestLimits& limits);
DetokenizeRequest parse_detokenize_request(std::string_view body, const RequestLimits& limits);

}  // namespace vkf::serve
