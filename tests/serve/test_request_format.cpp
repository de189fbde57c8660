// The fields that constrain the output to a grammar (host/serve/request_format.hpp): grammar,
// json_schema and response_format read into GBNF for completions and chat, and each refusal a
// 400 naming the field and, for a schema, the keyword.

#include "host/grammar/grammar.hpp"
#include "host/grammar/matcher.hpp"
#include "host/serve/api_error.hpp"
#include "host/serve/request.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

namespace vkf::serve {
namespace {

const RequestLimits kLimits{};

std::optional<std::string> chat_grammar(const std::string& fields) {
    return parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],)" + fields + "}", kLimits).grammar;
}

std::optional<std::string> completion_grammar(const std::string& fields) {
    return parse_completion_request(R"({"prompt":"x",)" + fields + "}", kLimits).grammar;
}

bool accepts(const std::string& gbnf, std::string_view text) {
    const grammar::Grammar g = grammar::parse_gbnf(gbnf);
    grammar::Matcher m(g);
    return m.accept(text) && m.complete();
}

// The 400 a request with `fields` gets: its param, and the message must name `mentions`.
void expect_refused(const std::string& fields, const std::string& param, const std::string& mentions) {
    SCOPED_TRACE(fields);
    for (const bool chat : {false, true}) {
        try {
            chat ? chat_grammar(fields) : completion_grammar(fields);
            ADD_FAILURE() << "accepted";
        } catch (const ApiError& e) {
            EXPECT_EQ(e.status(), 400);
            EXPECT_EQ(e.param().value_or(""), param);
            EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
        }
    }
}

TEST(RequestFormat, EachFieldGivesItsGrammar) {
    EXPECT_FALSE(chat_grammar(R"("response_format":{"type":"text"})"));
    EXPECT_FALSE(completion_grammar(R"("grammar":"")"));
    EXPECT_FALSE(completion_grammar(R"("response_format":null,"grammar":null)"));
    const std::optional<std::string> g = completion_grammar(R"("grammar":"root ::= \"yes\" | \"no\"")");
    ASSERT_TRUE(g);
    EXPECT_TRUE(accepts(*g, "yes"));
    const std::optional<std::string> object = chat_grammar(R"("response_format":{"type":"json_object"})");
    ASSERT_TRUE(object);
    EXPECT_TRUE(accepts(*object, R"({"a": [1]})"));
    EXPECT_FALSE(accepts(*object, "[1]"));
    const std::string schema = R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]})";
    for (const std::string& fields :
         {R"("response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":)" + schema +
              "}}",
          R"("response_format":{"type":"json_object","schema":)" + schema + "}", R"("json_schema":)" + schema}) {
        SCOPED_TRACE(fields);
        const std::optional<std::string> s = chat_grammar(fields);
        ASSERT_TRUE(s);
        EXPECT_TRUE(accepts(*s, R"({"n": 3})"));
        EXPECT_FALSE(accepts(*s, R"({})"));
        EXPECT_EQ(completion_grammar(fields), s);
    }
}

TEST(RequestFormat, RefusalsNameTheField) {
    expect_refused(R"("grammar":"root ::= \"a")", "grammar", "grammar:");
    expect_refused(R"("grammar":3)", "grammar", "must be a string");
    expect_refused(R"("response_format":"json")", "response_format", "must be an object");
    expect_refused(R"("response_format":{})", "response_format.type", "missing");
    expect_refused(R"("response_format":{"type":"yaml"})", "response_format.type", "'yaml'");
    expect_refused(R"("response_format":{"type":"json_schema"})", "response_format.json_schema", "missing");
    expect_refused(R"("response_format":{"type":"json_schema","json_schema":{"name":"x"}})",
                   "response_format.json_schema.schema", "missing");
    expect_refused(R"("response_format":{"type":"json_schema","json_schema":{"schema":{},"extra":1}})",
                   "response_format.json_schema.extra", "not a field");
    expect_refused(R"("response_format":{"type":"json_schema","json_schema":{"strict":"yes","schema":{}}})",
                   "response_format.json_schema.strict", "true or false");
    expect_refused(
        R"("response_format":{"type":"json_schema","json_schema":{"schema":{"properties":{"e":{"type":"string","format":"email"}}}}})",
        "response_format.json_schema.schema", "'format' is not supported");
    expect_refused(R"("json_schema":{"type":"string","pattern":"^a"})", "json_schema", "'pattern'");
    expect_refused(R"("json_schema":[])", "json_schema", "a JSON schema");
    std::string wide = R"("json_schema":{"properties":{)";
    for (int i = 0; i < 120; ++i) {
        wide += fmt::format(R"({}"p{}":{{"type":"string","maxLength":10000}})", i == 0 ? "" : ",", i);
    }
    expect_refused(wide + "}}", "json_schema", "elements in all");
    expect_refused(R"("grammar":"root ::= \"a\"","response_format":{"type":"json_object"})", "response_format",
                   "grammar and response_format both constrain");
}

}  // namespace
}  // namespace vkf::serve
