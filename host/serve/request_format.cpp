#include "host/serve/request_format.hpp"

#include "base/error.hpp"
#include "host/grammar/grammar.hpp"
#include "host/grammar/json_schema.hpp"
#include "host/serve/api_error.hpp"
#include "host/serve/request_fields.hpp"

#include <fmt/format.h>

#include <utility>
#include <vector>

namespace vkf::serve {
using namespace fields;

namespace {

// The schema's GBNF, its problems a 400 naming `param`.
std::string schema_grammar(const JsonValue& schema, const std::string& param) {
    if (!schema.is_object() && !schema.is_bool()) {
        wrong_type(param, schema, "a JSON schema (an object)");
    }
    try {
        std::string gbnf = grammar::json_schema_to_gbnf(schema);
        grammar::parse_gbnf(gbnf);  // its bounds (repetitions copied in all)
        return gbnf;
    } catch (const Error& e) {
        throw invalid_request(fmt::format("{}: {}", param, e.what()), param, "unsupported_parameter");
    }
}

std::optional<std::string> response_format(const JsonValue& v) {
    if (!v.is_object()) {
        wrong_type("response_format", v, "an object");
    }
    const JsonValue* type = field(v, "type");
    if (type == nullptr) {
        throw invalid_request("response_format.type is missing", "response_format.type", "missing_required_parameter");
    }
    const std::string kind = get_string(*type, "response_format.type");
    if (kind == "text") {
        return std::nullopt;
    }
    if (kind == "json_object") {
        // llama-server takes a schema here too.
        const JsonValue* schema = field(v, "schema");
        return schema != nullptr ? schema_grammar(*schema, "response_format.schema") : grammar::json_object_gbnf();
    }
    if (kind != "json_schema") {
        throw invalid_request(
            fmt::format("response_format.type '{}' is not one of \"text\", \"json_object\", \"json_schema\"", kind),
            "response_format.type");
    }
    const JsonValue* spec = field(v, "json_schema");
    if (spec == nullptr) {
        throw invalid_request("response_format.json_schema is missing", "response_format.json_schema",
                              "missing_required_parameter");
    }
    if (!spec->is_object()) {
        wrong_type("response_format.json_schema", *spec, "an object");
    }
    for (const JsonMember& m : spec->as_object()) {
        const std::string param = fmt::format("response_format.json_schema.{}", m.key);
        if (m.key == "name" || m.key == "description") {
            get_string(m.value, param);
        } else if (m.key == "strict") {
            get_bool(m.value, param);  // the grammar is always strict
        } else if (m.key != "schema") {
            throw invalid_request(fmt::format("{} is not a field of response_format.json_schema", param), param);
        }
    }
    const JsonValue* schema = field(*spec, "schema");
    if (schema == nullptr) {
        throw invalid_request("response_format.json_schema.schema is missing", "response_format.json_schema.schema",
                              "missing_required_parameter");
    }
    return schema_grammar(*schema, "response_format.json_schema.schema");
}

}  // namespace

std::optional<std::string> parse_output_format(const JsonValue& doc) {
    std::vector<std::pair<const char*, std::string>> given;
    if (const JsonValue* v = field(doc, "grammar")) {
        std::string text = get_string(*v, "grammar");
        if (!text.empty()) {  // llama-server's clients send "" for none
            try {
                grammar::parse_gbnf(text);
            } catch (const Error& e) {
                throw invalid_request(e.what(), "grammar");  // "grammar: line L, column C: ..."
            }
            given.emplace_back("grammar", std::move(text));
        }
    }
    if (const JsonValue* v = field(doc, "json_schema")) {
        given.emplace_back("json_schema", schema_grammar(*v, "json_schema"));
    }
    if (const JsonValue* v = field(doc, "response_format")) {
        if (std::optional<std::string> g = response_format(*v)) {
            given.emplace_back("response_format", std::move(*g));
        }
    }
    if (given.size() > 1) {
        throw invalid_request(
            fmt::format("{} and {} both constrain the output; give one", given[0].first, given[1].first),
            given[1].first);
    }
    if (given.empty()) {
        return std::nullopt;
    }
    return std::move(given[0].second);
}

}  // namespace vkf::serve
