// JSON schemas to GBNF (host/grammar/json_schema.hpp): the grammar's sentences for small
// schemas, checked with the matcher, and the refusals, each naming the keyword. Random schemas
// with an independent validator: schema_outputs_test.py.

#include "base/error.hpp"
#include "host/grammar/json_schema.hpp"
#include "host/grammar/matcher.hpp"

#include <gtest/gtest.h>

#include <string>

namespace vkf::grammar {
namespace {

bool matches(std::string_view schema, std::string_view text) {
    const Grammar g = parse_gbnf(json_schema_to_gbnf(parse_json(schema, "schema")));
    Matcher m(g);
    return m.accept(text) && m.complete();
}

std::string error_of(std::string_view schema) {
    try {
        json_schema_to_gbnf(parse_json(schema, "schema"));
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

TEST(JsonSchema, ObjectsWithRequiredAndOptionalProperties) {
    const char* s = R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},
                        "c":{"type":"boolean"}},"required":["b"]})";
    EXPECT_TRUE(matches(s, R"({"b":"x"})"));
    EXPECT_TRUE(matches(s, R"({"b": "x", "a": 1, "c": true})"));
    EXPECT_TRUE(matches(s, R"({"b":"x","c":false})"));
    EXPECT_FALSE(matches(s, R"({"a":1})"));          // b is required
    EXPECT_FALSE(matches(s, R"({"b":"x","d":1})"));  // only declared ones
    EXPECT_FALSE(matches(s, R"({"b":"x","a":1.5})"));
    const char* none = R"({"properties":{"a":{"type":"null"},"b":{"const":3}}})";
    EXPECT_TRUE(matches(none, "{}"));
    EXPECT_TRUE(matches(none, R"({"b":3})"));
    EXPECT_TRUE(matches(none, R"({"a":null,"b":3})"));
    EXPECT_FALSE(matches(none, R"({,"b":3})"));
    EXPECT_FALSE(matches(none, R"({"b":4})"));
}

TEST(JsonSchema, ArraysStringsEnumsAndAlternatives) {
    const char* a = R"({"type":"array","items":{"type":"number"},"minItems":1,"maxItems":2})";
    EXPECT_FALSE(matches(a, "[]"));
    EXPECT_TRUE(matches(a, "[1.5e3]"));
    EXPECT_TRUE(matches(a, "[-0, 2]"));
    EXPECT_FALSE(matches(a, "[1,2,3]"));
    const char* str = R"({"type":"string","minLength":2,"maxLength":3})";
    EXPECT_TRUE(matches(str, R"("\u00e9\n")"));
    EXPECT_TRUE(matches(str, "\"\xC3\xA9t\xC3\xA9\""));
    EXPECT_FALSE(matches(str, R"("a")"));
    EXPECT_FALSE(matches(str, R"("abcd")"));
    EXPECT_FALSE(matches(str, R"("\ud83d\ude00")"));  // one code point in two escapes
    EXPECT_TRUE(matches(R"({"enum":["a\"b",null,[1,{"k":2}]]})", R"("a\"b")"));
    EXPECT_TRUE(matches(R"({"enum":["a\"b",null,[1,{"k":2}]]})", R"([1,{"k":2}])"));
    EXPECT_TRUE(matches(R"({"type":["integer","null"]})", "null"));
    EXPECT_FALSE(matches(R"({"type":["integer","null"]})", "1.5"));
    EXPECT_TRUE(
        matches(R"({"anyOf":[{"type":"boolean"},{"$ref":"#/$defs/x"}],"$defs":{"x":{"type":"string"}}})", R"("s")"));
    const char* tree = R"({"$ref":"#/definitions/t","definitions":{"t":{"type":"object","properties":{
                          "c":{"type":"array","items":{"$ref":"#/definitions/t"}}},"required":["c"]}}})";
    EXPECT_TRUE(matches(tree, R"({"c":[{"c":[]},{"c":[{"c":[]}]}]})"));
    EXPECT_FALSE(matches(tree, R"({"c":[{}]})"));
    EXPECT_TRUE(matches(R"({"type":"object","additionalProperties":{"type":"integer"}})", R"({"x":1,"y":2})"));
    EXPECT_FALSE(matches(R"({"type":"object","additionalProperties":{"type":"integer"}})", R"({"x":"1"})"));
    EXPECT_TRUE(matches("true", R"({"any":[1,"2",null]})"));
}

TEST(JsonSchema, RefusesWhatItCannotGenerateExactly) {
    EXPECT_NE(error_of(R"({"type":"string","pattern":"^a+$"})").find("'pattern' is not supported"), std::string::npos);
    const std::string two = error_of(R"({"properties":{"n":{"type":"integer","minimum":0,"format":"x"}}})");
    EXPECT_NE(two.find("'minimum', 'format' are not supported"), std::string::npos) << two;
    EXPECT_NE(two.find("properties.n"), std::string::npos) << two;
    EXPECT_NE(error_of(R"({"$ref":"#/$defs/missing"})").find("$ref '#/$defs/missing'"), std::string::npos);
    EXPECT_NE(error_of(R"({"$ref":"http://example.com/s.json"})").find("is not a schema"), std::string::npos);
    EXPECT_NE(error_of("false").find("allows no value"), std::string::npos);
    EXPECT_NE(error_of(R"({"type":"array","minItems":3,"maxItems":2})").find("allows no value"), std::string::npos);
    EXPECT_NE(error_of(R"({"type":"decimal"})").find("unknown type 'decimal'"), std::string::npos);
    EXPECT_NE(error_of(R"({"enum":[]})").find("empty enum"), std::string::npos);
    EXPECT_NE(error_of(R"({"type":"array","minItems":-1})").find("minItems"), std::string::npos);
}

TEST(JsonSchema, JsonObjectTakesAnyObjectOnly) {
    const Grammar g = parse_gbnf(json_object_gbnf());
    for (const char* ok : {"{}", R"({"a": [1, {"b": null}], "c": "d"})"}) {
        Matcher m(g);
        EXPECT_TRUE(m.accept(ok) && m.complete()) << ok;
    }
    for (const char* bad : {"[]", "1", R"({"a" 1})"}) {
        Matcher m(g);
        EXPECT_FALSE(m.accept(bad) && m.complete()) << bad;
    }
}

}  // namespace
}  // namespace vkf::grammar
