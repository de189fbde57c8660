#pragma once
// JSON schemas to GBNF (host/grammar/grammar.hpp), for response_format's json_schema and tool
// call arguments (issue 43): the grammar's sentences are JSON texts that validate against the
// schema. The subset, as large as llama.cpp's json-schema-to-grammar where it can be exact:
//   type (object, array, string, number, integer, boolean, null, or an array of them);
//   properties and required: required ones in `properties` order, then each optional one
//     present or not, in the same order (a required name without a schema takes any value);
//   additionalProperties: false or absent; true or a schema over an object without
//     properties (a map of such values); with properties, only they are generated;
//   items, minItems, maxItems; minLength, maxLength (code points: \u escapes of surrogates
//     are left out, so each escape is one code point); enum and const (any JSON values);
//   anyOf and oneOf (branches as alternatives: oneOf's must be disjoint, as the grammar
//     cannot exclude a value two branches take); $ref to "#/$defs/NAME" or
//     "#/definitions/NAME" (recursion included); boolean schemas true (any value);
//   annotations, ignored: title, description, default, examples, $schema, $id, $comment,
//     deprecated, readOnly, writeOnly.
// Every other keyword (pattern, format, minimum, allOf, not, prefixItems, uniqueItems, ...)
// is refused with a vkf::Error naming it and where it is, never ignored: the output must
// validate. Numbers are at most 16 digits before and after the point, with an exponent of
// at most 2 digits; whitespace is at most one space between tokens.

#include "host/io/json.hpp"

#include <string>
#include <string_view>

namespace vkf::grammar {

// GBNF whose root rule is a JSON text valid against `schema`. Throws vkf::Error naming each
// unsupported keyword, a bad value of a supported one ("minItems: expected ..."), a $ref it
// cannot resolve, or a schema no value can satisfy (false, minItems > maxItems).
std::string json_schema_to_gbnf(const JsonValue& schema);

// GBNF of any JSON object (response_format {"type": "json_object"}).
std::string json_object_gbnf();

}  // namespace vkf::grammar
