// Tool calls (host/serve/tool_calls.hpp): tools and tool_choice read from chat requests, the
// call's grammar (only the chosen functions, arguments by their schemas), the tool list in the
// prompt, the history's tool messages as the chat format's turns, an answer's text back as a
// call, and the refusals naming the field.

#include "host/grammar/grammar.hpp"
#include "host/grammar/matcher.hpp"
#include "host/serve/api_error.hpp"
#include "host/serve/request.hpp"
#include "host/serve/tool_calls.hpp"

#include <gtest/gtest.h>

#include <string>

namespace vkf::serve {
namespace {

const RequestLimits kLimits{};
const std::string kTools =
    R"("tools":[{"type":"function","function":{"name":"add","description":"Adds.","parameters":{"type":"object",)"
    R"("properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}}},)"
    R"({"type":"function","function":{"name":"now"}}])";

GenerationRequest chat(const std::string& fields,
                       const std::string& messages = R"([{"role":"user","content":"1 and 2?"}])") {
    return parse_chat_request(R"({"messages":)" + messages + "," + fields + "}", kLimits);
}

bool accepts(const std::string& gbnf, std::string_view text) {
    const grammar::Grammar g = grammar::parse_gbnf(gbnf);
    grammar::Matcher m(g);
    return m.accept(text) && m.complete();
}

std::string refusal(const std::string& fields, const std::string& endpoint = "chat") {
    try {
        endpoint == "chat" ? chat(fields) : parse_completion_request(R"({"prompt":"x",)" + fields + "}", kLimits);
    } catch (const ApiError& e) {
        return e.param().value_or("") + ": " + e.what();
    }
    return "accepted";
}

TEST(ToolCalls, ChoicesGiveTheirGrammars) {
    const GenerationRequest required = chat(kTools + R"(,"tool_choice":"required")");
    ASSERT_TRUE(required.tools && required.grammar);
    EXPECT_TRUE(accepts(*required.grammar, R"({"name": "add", "arguments": {"a": 1, "b": 2}})"));
    EXPECT_TRUE(accepts(*required.grammar, R"({"name":"now","arguments":{"x":[]}})"));
    EXPECT_FALSE(accepts(*required.grammar, R"({"name": "add", "arguments": {"a": 1}})"));
    EXPECT_FALSE(accepts(*required.grammar, "It is 3."));
    const GenerationRequest automatic = chat(kTools);  // tool_choice absent: auto
    ASSERT_TRUE(automatic.grammar);
    EXPECT_TRUE(accepts(*automatic.grammar, "It is 3."));
    EXPECT_TRUE(accepts(*automatic.grammar, R"({"name": "now", "arguments": {}})"));
    EXPECT_FALSE(accepts(*automatic.grammar, R"({"name": "then", "arguments": {}})"));
    const GenerationRequest named = chat(kTools + R"(,"tool_choice":{"type":"function","function":{"name":"now"}})");
    ASSERT_TRUE(named.grammar);
    EXPECT_FALSE(accepts(*named.grammar, R"({"name": "add", "arguments": {"a": 1, "b": 2}})"));
    EXPECT_TRUE(accepts(*named.grammar, R"({"name": "now", "arguments": {}})"));
    const GenerationRequest none = chat(kTools + R"(,"tool_choice":"none")");
    EXPECT_FALSE(none.grammar);
    EXPECT_EQ(none.messages.size(), 1u) << "no tool list in the prompt";
    ASSERT_EQ(required.messages.size(), 2u);
    EXPECT_EQ(required.messages[0].role, "system");
    EXPECT_NE(required.messages[0].content.find("- add: Adds."), std::string::npos);
}

TEST(ToolCalls, HistoryAndAnswers) {
    const GenerationRequest r =
        chat(kTools, R"([{"role":"system","content":"Be brief."},{"role":"user","content":"1 and 2?"},)"
                     R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function",)"
                     R"("function":{"name":"add","arguments":"{\"a\":1,\"b\":2}"}}]},)"
                     R"({"role":"tool","tool_call_id":"call_9","content":"3"}])");
    ASSERT_EQ(r.messages.size(), 4u);
    EXPECT_EQ(r.messages[0].content.substr(0, 9), "Be brief.");
    EXPECT_NE(r.messages[0].content.find("You can call these tools"), std::string::npos);
    EXPECT_EQ(r.messages[2].role, "assistant");
    EXPECT_EQ(r.messages[2].content, R"({"name": "add", "arguments": {"a":1,"b":2}})");
    EXPECT_EQ(r.messages[3].role, "user");
    EXPECT_EQ(r.messages[3].content, "Result of tool call call_9: 3");
    const std::optional<ToolCall> call = parse_tool_call(R"({"name": "add", "arguments": {"a": 1, "b": 2}})", *r.tools);
    ASSERT_TRUE(call);
    EXPECT_EQ(call->name, "add");
    EXPECT_EQ(call->arguments, R"({"a":1,"b":2})");
    EXPECT_EQ(call->id.substr(0, 5), "call_");
    EXPECT_FALSE(parse_tool_call("It is 3.", *r.tools));
    EXPECT_FALSE(parse_tool_call(R"({"name": "add", "argu)", *r.tools)) << "cut short: text";
}

TEST(ToolCalls, RefusalsNameTheField) {
    EXPECT_EQ(refusal(kTools, "completions").substr(0, 7), "tools: ");
    EXPECT_NE(refusal(R"("tools":[])").find("tools: "), std::string::npos);
    EXPECT_NE(refusal(R"("tools":[{"type":"function","function":{"description":"x"}}])").find("tools[0].function.name"),
              std::string::npos);
    EXPECT_NE(refusal(R"("tools":[{"type":"function","function":{"name":"f","parameters":{"type":"string",)"
                      R"("format":"date"}}}])")
                  .find("'format' is not supported"),
              std::string::npos);
    EXPECT_NE(refusal(kTools + R"(,"tool_choice":"sometimes")").find("tool_choice: "), std::string::npos);
    EXPECT_NE(refusal(kTools + R"(,"tool_choice":{"type":"function","function":{"name":"then"}})")
                  .find("'then', which is not one of the tools"),
              std::string::npos);
    EXPECT_NE(refusal(R"("tool_choice":"required")").find("tool_choice needs tools"), std::string::npos);
    EXPECT_NE(refusal(kTools + R"(,"response_format":{"type":"json_object"})").find("both constrain"),
              std::string::npos);
    EXPECT_EQ(refusal(kTools + R"(,"tool_choice":"none","response_format":{"type":"json_object"})"), "accepted");
}

}  // namespace
}  // namespace vkf::serve
