// host/serve: request bodies into typed requests (every refusal an OpenAI error object naming
// the field), error objects, response and chunk shapes, SSE framing (test_serve_access.cpp:
// the metrics registry and access rules).

#include "host/serve/access.hpp"
#include "host/serve/api_error.hpp"
#include "host/serve/metrics.hpp"
#include "host/serve/request.hpp"
#include "host/serve/responses.hpp"
#include "host/serve/sse.hpp"
#include "tests/support/test_support.hpp"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace vkf::serve {
namespace {

const RequestLimits kLimits{};

// The error a body gets: status, param and code, and the message must name `mentions`.
void expect_refused(const std::string& body, Endpoint endpoint, const std::string& param, const std::string& mentions,
                    int status = 400) {
    SCOPED_TRACE(body);
    try {
        if (endpoint == Endpoint::Chat) {
            parse_chat_request(body, kLimits);
        } else {
            parse_completion_request(body, kLimits);
        }
        ADD_FAILURE() << "accepted";
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status(), status);
        EXPECT_EQ(e.type(), "invalid_request_error");
        EXPECT_EQ(e.param().value_or(""), param);
        EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
    }
}

TEST(ServeRequest, CompletionFieldsAreRead) {
    const GenerationRequest r = parse_completion_request(
        R"({"model":"m","prompt":"Hello","max_tokens":7,"temperature":0,"top_p":0.5,"top_k":3,"seed":-1,)"
        R"("stop":["a","bc"],"n":2,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"user":"x"})",
        kLimits);
    EXPECT_EQ(r.endpoint, Endpoint::Completions);
    EXPECT_EQ(r.model, "m");
    ASSERT_EQ(r.prompts.size(), 1u);
    EXPECT_EQ(r.prompts[0].text.value_or(""), "Hello");
    EXPECT_EQ(r.max_tokens.value_or(0), 7u);
    EXPECT_EQ(r.temperature, 0.0);
    EXPECT_EQ(r.top_p, 0.5);
    EXPECT_EQ(r.top_k, 3u);
    EXPECT_EQ(r.seed.value_or(0), ~std::uint64_t{0});  // -1's bits
    EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "bc"}));
    EXPECT_EQ(r.n, 2u);
    EXPECT_TRUE(r.stream);
    EXPECT_TRUE(r.include_usage);
    EXPECT_TRUE(r.ignore_eos);
    EXPECT_FALSE(r.cache_salt);
}

TEST(ServeRequest, CacheSaltIsAString) {
    EXPECT_EQ(parse_completion_request(R"({"prompt":"x","cache_salt":"tenant-7"})", kLimits).cache_salt.value_or(""),
              "tenant-7");
    EXPECT_EQ(parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"cache_salt":"t"})", kLimits)
                  .cache_salt.value_or(""),
              "t");
    expect_refused(R"({"prompt":"x","cache_salt":7})", Endpoint::Completions, "cache_salt", "must be a string");
    expect_refused(R"({"messages":[{"role":"user","content":"x"}],"cache_salt":["a"]})", Endpoint::Chat, "cache_salt",
                   "must be a string");
    expect_refused(R"({"prompt":"x","cache_salt":""})", Endpoint::Completions, "cache_salt", "empty");
}

TEST(ServeRequest, DefaultsAreOpenAis) {
    const GenerationRequest r = parse_completion_request(R"({"prompt":"x","max_tokens":null,"stop":null})", kLimits);
    EXPECT_FALSE(r.max_tokens);
    EXPECT_EQ(r.temperature, 1.0);
    EXPECT_EQ(r.top_p, 1.0);
    EXPECT_EQ(r.n, 1u);
    EXPECT_FALSE(r.stream);
    EXPECT_TRUE(r.stop.empty());
}

TEST(ServeRequest, PromptForms) {
    EXPECT_EQ(parse_completion_request(R"({"prompt":["one"]})", kLimits).prompts.at(0).text.value_or(""), "one");
    EXPECT_EQ(parse_completion_request(R"({"prompt":[5,0,7]})", kLimits).prompts.at(0).ids,
              (std::vector<std::uint32_t>{5, 0, 7}));
    EXPECT_EQ(parse_completion_request(R"({"prompt":[[9]]})", kLimits).prompts.at(0).ids,
              (std::vector<std::uint32_t>{9}));
    // Several prompts (LangChain's generate([a, b])), each in its form.
    const GenerationRequest several = parse_completion_request(R"({"prompt":["a",[4,2],"c"]})", kLimits);
    ASSERT_EQ(several.prompts.size(), 3u);
    EXPECT_EQ(several.prompts[0].text.value_or(""), "a");
    EXPECT_EQ(several.prompts[1].ids, (std::vector<std::uint32_t>{4, 2}));
    EXPECT_EQ(several.prompts[2].text.value_or(""), "c");
    EXPECT_EQ(parse_completion_request(R"({"prompt":"s","stop":"end"})", kLimits).stop,
              (std::vector<std::string>{"end"}));
}

TEST(ServeRequest, BadCompletionsNameTheField) {
    const auto c = Endpoint::Completions;
    expect_refused(R"({"max_tokens":3})", c, "prompt", "prompt is missing");
    expect_refused(R"({"prompt":5})", c, "prompt", "must be a string");
    expect_refused(R"({"prompt":["a","b"],"stream":true})", c, "prompt", "several prompts");
    expect_refused(R"({"prompt":["a",5]})", c, "prompt[1]", "a string or an array of token ids");
    expect_refused(R"({"prompt":[)" + std::string(16, ' ') +
                       R"("a","a","a","a","a","a","a","a","a","a","a","a","a","a","a","a","a"]})",
                   c, "prompt", "the limit is 16");
    expect_refused(R"({"prompt":[]})", c, "prompt", "empty");
    expect_refused(R"({"prompt":[1,-2]})", c, "prompt[1]", "between 0 and");
    expect_refused(R"({"prompt":[1,2.5]})", c, "prompt[1]", "integer");
    expect_refused(R"({"prompt":"x","max_tokens":0})", c, "max_tokens", "between 1 and 4096");
    expect_refused(R"({"prompt":"x","max_tokens":4097})", c, "max_tokens", "--max-tokens");
    expect_refused(R"({"prompt":"x","max_tokens":"5"})", c, "max_tokens", "must be an integer, not string");
    expect_refused(R"({"prompt":"x","temperature":2.5})", c, "temperature", "between 0");
    expect_refused(R"({"prompt":"x","temperature":"hot"})", c, "temperature", "must be a number");
    expect_refused(R"({"prompt":"x","top_p":0})", c, "top_p", "above 0");
    expect_refused(R"({"prompt":"x","top_p":1.5})", c, "top_p", "between 0");
    expect_refused(R"({"prompt":"x","top_k":-1})", c, "top_k", "between 0");
    expect_refused(R"({"prompt":"x","seed":1.5})", c, "seed", "64-bit integer");
    expect_refused(R"({"prompt":"x","stop":["a","b","c","d","e"]})", c, "stop", "at most 4");
    expect_refused(R"({"prompt":"x","stop":[""]})", c, "stop[0]", "empty");
    expect_refused(R"({"prompt":"x","stop":[3]})", c, "stop[0]", "must be a string");
    expect_refused(R"({"prompt":"x","stop":")" + std::string(300, 'a') + R"("})", c, "stop", "over 256 bytes");
    expect_refused(R"({"prompt":"x","n":5})", c, "n", "--max-n");
    expect_refused(R"({"prompt":"x","stream":"yes"})", c, "stream", "true or false");
    expect_refused(R"({"prompt":"x","stream_options":{"include_usage":true}})", c, "stream_options",
                   "only allowed with stream");
    expect_refused(R"({"prompt":"x","logprobs":6})", c, "logprobs", "between 0 and 5");
    expect_refused(R"({"prompt":"x","logprobs":true})", c, "logprobs", "integer");
    expect_refused(R"({"prompt":"x","top_logprobs":2})", c, "top_logprobs", "chat field");
    expect_refused(R"({"prompt":"x","presence_penalty":2.5})", c, "presence_penalty", "between -2");
    expect_refused(R"({"prompt":"x","min_p":1.5})", c, "min_p", "between 0");
    expect_refused(R"({"prompt":"x","typical_p":0})", c, "typical_p", "above 0");
    expect_refused(R"({"prompt":"x","repetition_penalty":0})", c, "repetition_penalty", "above 0");
    expect_refused(R"({"prompt":"x","logit_bias":[1]})", c, "logit_bias", "must be an object");
    expect_refused(R"({"prompt":"x","logit_bias":{"x1":2}})", c, "logit_bias", "must be a token id");
    expect_refused(R"({"prompt":"x","logit_bias":{"-1":2}})", c, "logit_bias", "must be a token id");
    expect_refused(R"({"prompt":"x","logit_bias":{"7":101}})", c, "logit_bias[\"7\"]", "between -100");
    expect_refused(R"({"prompt":"x","grammar":"root ::= a"})", c, "grammar", "'a' is used but not defined");
    expect_refused(R"({"prompt":"x","json_schema":{"pattern":"x"}})", c, "json_schema", "'pattern' is not supported");
    expect_refused(R"({"prompt":"x","mirostat":2})", c, "mirostat", "not supported");
    expect_refused(R"({"prompt":"x","echo":1})", c, "echo", "true or false");
}

TEST(ServeRequest, LogprobsFields) {
    EXPECT_EQ(parse_completion_request(R"({"prompt":"x","logprobs":3})", kLimits).logprobs.value_or(99), 3u);
    EXPECT_FALSE(parse_completion_request(R"({"prompt":"x"})", kLimits).logprobs);
    EXPECT_TRUE(parse_completion_request(R"({"prompt":"x","echo":true,"logprobs":0})", kLimits).echo);
    EXPECT_TRUE(parse_completion_request(R"({"prompt":"x","echo":true,"stream":true})", kLimits).echo);
    EXPECT_FALSE(parse_completion_request(R"({"prompt":"x"})", kLimits).echo);
    const std::string chat = R"({"messages":[{"role":"user","content":"x"}])";
    EXPECT_EQ(parse_chat_request(chat + R"(,"logprobs":true,"top_logprobs":20})", kLimits).logprobs.value_or(99), 20u);
    EXPECT_EQ(parse_chat_request(chat + R"(,"logprobs":true})", kLimits).logprobs.value_or(99), 0u);
    EXPECT_FALSE(parse_chat_request(chat + R"(,"logprobs":false})", kLimits).logprobs);
    for (const auto& [body, param, mentions] :
         {std::tuple<std::string, std::string, std::string>{chat + R"(,"top_logprobs":2})", "top_logprobs",
                                                            "needs logprobs"},
          {chat + R"(,"logprobs":true,"top_logprobs":21})", "top_logprobs", "between 0 and 20"},
          {chat + R"(,"logprobs":1})", "logprobs", "true or false"},
          {chat + R"(,"echo":true})", "echo", "not supported"}}) {
        try {
            parse_chat_request(body, kLimits);
            ADD_FAILURE() << body << " accepted";
        } catch (const ApiError& e) {
            EXPECT_EQ(e.param().value_or(""), param) << body;
            EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
        }
    }
}

TEST(ServeRequest, SamplerFieldsAreRead) {
    const GenerationRequest r = parse_chat_request(
        R"({"messages":[{"role":"user","content":"x"}],"min_p":0.05,"typical_p":0.9,"repetition_penalty":1.1,)"
        R"("presence_penalty":-0.5,"frequency_penalty":1.5,"repeat_last_n":32,"logit_bias":{"50256":-100,"7":2.5}})",
        kLimits);
    EXPECT_EQ(r.min_p, 0.05);
    EXPECT_EQ(r.typical_p, 0.9);
    EXPECT_EQ(r.repetition_penalty, 1.1);
    EXPECT_EQ(r.presence_penalty, -0.5);
    EXPECT_EQ(r.frequency_penalty, 1.5);
    EXPECT_EQ(r.repeat_last_n.value_or(0), 32u);
    EXPECT_EQ(r.logit_bias, (std::vector<std::pair<std::uint32_t, double>>{{50256, -100.0}, {7, 2.5}}));
    const GenerationRequest plain = parse_completion_request(R"({"prompt":"x"})", kLimits);
    EXPECT_EQ(plain.min_p, 0.0);
    EXPECT_EQ(plain.typical_p, 1.0);
    EXPECT_EQ(plain.repetition_penalty, 1.0);
    EXPECT_FALSE(plain.repeat_last_n);
    EXPECT_TRUE(plain.logit_bias.empty());
}

TEST(ServeRequest, NeutralValuesOfUnsupportedFieldsPass) {
    EXPECT_NO_THROW(parse_completion_request(
        R"({"prompt":"x","logprobs":null,"echo":false,"presence_penalty":0,"frequency_penalty":0,"best_of":1,)"
        R"("mirostat":0,"tfs_z":1,"dry_multiplier":0,"xtc_probability":0,"grammar":""})",
        kLimits));
    EXPECT_NO_THROW(parse_chat_request(
        R"({"messages":[{"role":"user","content":"x"}],"logprobs":false,"response_format":{"type":"text"}})", kLimits));
}

TEST(ServeRequest, MalformedJsonIsRefusedWithWhere) {
    for (const std::string body :
         {"", "{", R"({"prompt":"x",})", "[1,2]", "nul", "{\"prompt\":\"\xff\"}", R"({"prompt":"x","prompt":"y"})"}) {
        SCOPED_TRACE(body);
        try {
            parse_completion_request(body, kLimits);
            ADD_FAILURE() << "accepted";
        } catch (const ApiError& e) {
            EXPECT_EQ(e.status(), 400);
            EXPECT_EQ(e.type(), "invalid_request_error");
        }
    }
    try {
        parse_completion_request("{\n  \"prompt\": tru }", kLimits);
        ADD_FAILURE();
    } catch (const ApiError& e) {
        EXPECT_EQ(e.code().value_or(""), "invalid_json");
        EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
    }
}

TEST(ServeRequest, NestingIsBounded) {
    const std::string deep = R"({"prompt":"x","user":)" + std::string(100, '[') + std::string(100, ']') + "}";
    EXPECT_THROW(parse_completion_request(deep, kLimits), ApiError);
}

TEST(ServeRequest, ChatMessages) {
    const GenerationRequest r = parse_chat_request(
        R"({"messages":[{"role":"system","content":"Be brief."},)"
        R"({"role":"user","content":[{"type":"text","text":"Hi "},{"type":"text","text":"there"}]},)"
        R"({"role":"assistant","content":null},{"role":"user","content":"?"}],"max_completion_tokens":9})",
        kLimits);
    EXPECT_EQ(r.endpoint, Endpoint::Chat);
    ASSERT_EQ(r.messages.size(), 4u);
    EXPECT_EQ(r.messages[0].role, "system");
    EXPECT_EQ(r.messages[1].content, "Hi there");
    EXPECT_EQ(r.messages[2].content, "");
    EXPECT_EQ(r.max_tokens.value_or(0), 9u);
}

TEST(ServeRequest, BadChatsNameTheMessage) {
    const auto c = Endpoint::Chat;
    expect_refused(R"({"prompt":"x"})", c, "messages", "messages is missing");
    expect_refused(R"({"messages":[]})", c, "messages", "empty");
    expect_refused(R"({"messages":{}})", c, "messages", "must be an array");
    expect_refused(R"({"messages":[{"role":"user","content":"a"},"b"]})", c, "messages[1]", "must be an object");
    expect_refused(R"({"messages":[{"content":"a"}]})", c, "messages[0].role", "missing");
    expect_refused(R"({"messages":[{"role":7,"content":"a"}]})", c, "messages[0].role", "must be a string");
    expect_refused(R"({"messages":[{"role":"user"}]})", c, "messages[0].content", "missing");
    expect_refused(R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]})", c,
                   "messages[0].content[0].type", "text only");
    expect_refused(R"({"messages":[{"role":"user","content":"a"}],"tools":[{}]})", c, "tools[0].type",
                   "must be \"function\"");
    expect_refused(R"({"messages":[{"role":"user","content":"a"}],"functions":[{}]})", c, "functions", "not supported");
}

TEST(ServeRequest, Embeddings) {
    EmbeddingRequest r = parse_embedding_request(R"({"input":"a b","model":"e"})", kLimits);
    EXPECT_EQ(r.texts, (std::vector<std::string>{"a b"}));
    EXPECT_FALSE(r.base64);
    r = parse_embedding_request(R"({"input":["a","b"],"encoding_format":"base64"})", kLimits);
    EXPECT_EQ(r.texts.size(), 2u);
    EXPECT_TRUE(r.base64);
    r = parse_embedding_request(R"({"input":[[1,2],[3]]})", kLimits);
    EXPECT_EQ(r.ids, (std::vector<std::vector<std::uint32_t>>{{1, 2}, {3}}));
    EXPECT_EQ(parse_embedding_request(R"({"input":[4,5]})", kLimits).ids.size(), 1u);
    for (const std::string body :
         {R"({})", R"({"input":[]})", R"({"input":""})", R"({"input":["a",1]})",
          R"({"input":"a","encoding_format":"int8"})", R"({"input":"a","dimensions":8})", R"({"input":{}})"}) {
        EXPECT_THROW(parse_embedding_request(body, kLimits), ApiError) << body;
    }
}

TEST(ServeRequest, Base64IsRfc4648) {
    EXPECT_EQ(base64_encode(""), "");
    EXPECT_EQ(base64_encode("f"), "Zg==");
    EXPECT_EQ(base64_encode("fo"), "Zm8=");
    EXPECT_EQ(base64_encode("foo"), "Zm9v");
    EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
    EXPECT_EQ(base64_encode(std::string("\xff\x00\x80", 3)), "/wCA");
}

TEST(ServeError, ObjectHasOpenAisFields) {
    const nlohmann::ordered_json body = invalid_request("max_tokens is too large", "max_tokens").body();
    ASSERT_TRUE(body.contains("error"));
    EXPECT_EQ(body["error"]["message"], "max_tokens is too large");
    EXPECT_EQ(body["error"]["type"], "invalid_request_error");
    EXPECT_EQ(body["error"]["param"], "max_tokens");
    EXPECT_EQ(body["error"]["code"], "invalid_value");
    const nlohmann::ordered_json none = server_error("boom").body();
    EXPECT_TRUE(none["error"]["param"].is_null());
    EXPECT_TRUE(none["error"]["code"].is_null());
    EXPECT_EQ(unauthorized().status(), 401);
    EXPECT_EQ(overloaded(4, 2).status(), 503);
    EXPECT_NE(std::string(overloaded(4, 2).what()).find("--queue"), std::string::npos);
    const ApiError big = error_for_status(413, 1024);
    EXPECT_EQ(big.status(), 413);
    EXPECT_NE(std::string(big.what()).find("1024 bytes"), std::string::npos);
}

TEST(ServeSse, EventFraming) {
    const std::string event = sse_event({{"text", "a\nb"}});
    EXPECT_EQ(event, "data: {\"text\":\"a\\nb\"}\n\n");
    EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
    // Invalid UTF-8 is replaced, not thrown: a stream cannot turn into an error any more.
    EXPECT_EQ(sse_event({{"t", std::string("\xff")}}), "data: {\"t\":\"\xEF\xBF\xBD\"}\n\n");
}

TEST(ServeResponses, CompletionAndChunks) {
    const ResponseHead chat{.endpoint = Endpoint::Chat, .id = "chatcmpl-1", .created = 5, .model = "m"};
    const auto body = completion_body(chat, {{.index = 0, .text = "hi", .finish_reason = "stop"}},
                                      {.prompt_tokens = 3, .completion_tokens = 2, .cached_tokens = 1});
    EXPECT_EQ(body["object"], "chat.completion");
    EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
    EXPECT_EQ(body["choices"][0]["message"]["content"], "hi");
    // OpenAI's schema requires refusal in every chat message (null: none).
    ASSERT_TRUE(body["choices"][0]["message"].contains("refusal"));
    EXPECT_TRUE(body["choices"][0]["message"]["refusal"].is_null());
    EXPECT_EQ(body["usage"]["total_tokens"], 5);
    EXPECT_EQ(body["usage"]["prompt_tokens_details"]["cached_tokens"], 1);
    const auto first = chunk_body(chat, 1, "", std::nullopt, true);
    EXPECT_EQ(first["object"], "chat.completion.chunk");
    EXPECT_EQ(first["choices"][0]["index"], 1);
    EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
    EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
    const auto last = chunk_body(chat, 0, "", std::string("length"));
    EXPECT_TRUE(last["choices"][0]["delta"].empty());
    EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
    const ResponseHead text{.endpoint = Endpoint::Completions, .id = "cmpl-1", .created = 5, .model = "m"};
    const auto piece = chunk_body(text, 0, " word", std::nullopt);
    EXPECT_EQ(piece["object"], "text_completion");
    EXPECT_EQ(piece["choices"][0]["text"], " word");
    const auto usage = usage_chunk_body(text, {.prompt_tokens = 1, .completion_tokens = 4});
    EXPECT_TRUE(usage["choices"].empty());
    EXPECT_EQ(usage["usage"]["completion_tokens"], 4);
    EXPECT_EQ(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
}

TEST(ServeResponses, LogprobsInOpenAisShapes) {
    const std::vector<LogprobEntry> entries = {{.token = "He", .logprob = -0.5, .top = {{"He", -0.5}, {"It", -1.5}}},
                                               {.token = "\xc3", .logprob = -2.0, .top = {}, .text_offset = 2}};
    const auto text = logprobs_json(Endpoint::Completions, entries);
    EXPECT_EQ(text["tokens"], nlohmann::ordered_json({"He", "\xc3"}));
    EXPECT_EQ(text["token_logprobs"], nlohmann::ordered_json({-0.5, -2.0}));
    EXPECT_EQ(text["top_logprobs"][0]["It"], -1.5);
    EXPECT_EQ(text["text_offset"], nlohmann::ordered_json({0, 2}));
    const auto chat = logprobs_json(Endpoint::Chat, entries);
    EXPECT_TRUE(chat["refusal"].is_null());
    EXPECT_EQ(chat["content"][0]["top_logprobs"][1]["token"], "It");
    EXPECT_EQ(chat["content"][1]["bytes"], nlohmann::ordered_json({0xc3}));  // half a character, kept whole
    const ResponseHead head{.endpoint = Endpoint::Chat, .id = "c", .created = 1, .model = "m"};
    EXPECT_TRUE(chunk_body(head, 0, "x", std::nullopt)["choices"][0]["logprobs"].is_null());
    EXPECT_EQ(chunk_body(head, 0, "x", std::nullopt, false, &entries)["choices"][0]["logprobs"]["content"].size(), 2u);
}

}  // namespace
}  // namespace vkf::serve
