// Fuzzes vkf-server's request parser (host/serve/request.hpp) with what any client may POST:
// the first byte picks the route (completions, chat, embeddings, tokenize, detokenize), the
// rest is the body. A
// refusal must be an ApiError with a 4xx status whose error object names a string message;
// an accepted request must hold what the limits allow (n, stops, ids, messages), and its
// chunks and error objects must frame as one SSE `data:` line each.

#include "host/serve/api_error.hpp"
#include "host/serve/request.hpp"
#include "host/serve/responses.hpp"
#include "host/serve/sse.hpp"
#include "host/serve/tokenize_request.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

using namespace vkf::serve;

const RequestLimits kLimits{.max_tokens = 512, .max_n = 3, .max_messages = 64, .max_inputs = 16, .max_prompt_ids = 256};

void check_framed(const nlohmann::ordered_json& body) {
    const std::string event = sse_event(body);
    vkf::fuzz::check(event.rfind("data: ", 0) == 0 && event.ends_with("\n\n") && event.find('\n') == event.size() - 2,
                     "an SSE event is one data line and a blank line");
}

void check_generation(const GenerationRequest& r) {
    vkf::fuzz::check(r.n >= 1 && r.n <= kLimits.max_n, "n within its limit");
    vkf::fuzz::check(r.stop.size() <= kLimits.max_stops, "stops within their limit");
    for (const std::string& s : r.stop) {
        vkf::fuzz::check(!s.empty() && s.size() <= kLimits.max_stop_bytes, "stop strings non-empty and bounded");
    }
    vkf::fuzz::check(!r.max_tokens || (*r.max_tokens >= 1 && *r.max_tokens <= kLimits.max_tokens),
                     "max_tokens within its limit");
    vkf::fuzz::check(r.temperature >= 0 && r.temperature <= 2 && r.top_p > 0 && r.top_p <= 1,
                     "sampling parameters in range");
    vkf::fuzz::check(r.prompts.size() <= kLimits.max_prompts, "prompts within their limit");
    for (const PromptIn& p : r.prompts) {
        vkf::fuzz::check(p.ids.size() <= kLimits.max_prompt_ids, "prompt ids within their limit");
        vkf::fuzz::check(p.text.has_value() != !p.ids.empty(), "one prompt form");
    }
    vkf::fuzz::check(r.min_p >= 0 && r.min_p <= 1 && r.typical_p > 0 && r.typical_p <= 1 && r.repetition_penalty > 0 &&
                         r.logit_bias.size() <= kLimits.max_logit_bias,
                     "sampler fields in range");
    if (r.endpoint == Endpoint::Chat) {
        vkf::fuzz::check(!r.messages.empty() && r.messages.size() <= kLimits.max_messages,
                         "messages present and bounded");
    } else {
        vkf::fuzz::check(!r.prompts.empty(), "a prompt");
    }
    const ResponseHead head{.endpoint = r.endpoint, .id = "x", .created = 0, .model = r.model};
    for (const ChatMessageIn& m : r.messages) {
        check_framed(chunk_body(head, 0, m.content, std::nullopt));
    }
    for (const PromptIn& p : r.prompts) {
        check_framed(chunk_body(head, 0, p.text.value_or(""), std::string("stop")));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const std::string_view body = vkf::fuzz::as_text(data + 1, size - 1);
    try {
        switch (data[0] % 5) {
            case 0:
                check_generation(parse_completion_request(body, kLimits));
                break;
            case 1:
                check_generation(parse_chat_request(body, kLimits));
                break;
            case 3:
                parse_tokenize_request(body, kLimits);
                break;
            case 4:
                vkf::fuzz::check(parse_detokenize_request(body, kLimits).ids.size() <= kLimits.max_prompt_ids,
                                 "detokenize ids within their limit");
                break;
            default: {
                const EmbeddingRequest r = parse_embedding_request(body, kLimits);
                vkf::fuzz::check(r.texts.empty() != r.ids.empty(), "one input form");
                vkf::fuzz::check(r.texts.size() + r.ids.size() <= kLimits.max_inputs, "inputs within their limit");
                break;
            }
        }
    } catch (const ApiError& e) {
        vkf::fuzz::check(e.status() >= 400 && e.status() < 500, "a request is refused with a 4xx status");
        vkf::fuzz::check(!std::string(e.what()).empty(), "a refusal says why");
        check_framed(e.body());
    } catch (const std::exception&) {
        vkf::fuzz::check(false, "only ApiError escapes the request parser");
    }
    return 0;
}
