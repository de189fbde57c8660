#include "host/grammar/json_schema.hpp"

#include "base/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace vkf::grammar {

namespace {

// The rules every schema may use; only those reached are written.
struct Primitive {
    std::string_view name, body;
    std::vector<std::string_view> uses;
};
const std::array<Primitive, 11> kPrimitives = {{
    {"space", R"(" "?)", {}},
    // An escape of a UTF-16 surrogate would make two escapes one code point (minLength).
    {"char",
     R"([^"\\\x00-\x1F\x7F] | "\\" (["\\/bfnrt] | "u" ([0-9a-cA-C] hex hex hex | [dD] [0-7] hex hex | [eEfF] hex hex hex)))",
     {"hex"}},
    {"hex", "[0-9a-fA-F]", {}},
    {"string", R"("\"" char* "\"" space)", {"char", "space"}},
    {"integer", R"("-"? ("0" | [1-9] [0-9]{0,15}) space)", {"space"}},
    {"number", R"("-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})? space)", {"space"}},
    {"boolean", R"(("true" | "false") space)", {"space"}},
    {"null", R"("null" space)", {"space"}},
    {"value",
     "object | array | string | number | boolean | null",
     {"object", "array", "string", "number", "boolean", "null"}},
    {"object",
     R"("{" space (string ":" space value ("," space string ":" space value)*)? "}" space)",
     {"string", "space", "value"}},
    {"array", R"("[" space (value ("," space value)*)? "]" space)", {"value", "space"}},
}};

const std::set<std::string_view> kAnnotations = {"title", "description", "default",    "examples", "$schema",
                                                 "$id",   "$comment",    "deprecated", "readOnly", "writeOnly"};
const std::set<std::string_view> kSupported = {"type",      "properties", "required", "additionalProperties",
                                               "items",     "minItems",   "maxItems", "minLength",
                                               "maxLength", "enum",       "const",    "anyOf",
                                               "oneOf",     "$ref",       "$defs",    "definitions"};

// A GBNF literal of `bytes`: quotes, backslashes and control characters escaped.
std::string literal(std::string_view bytes) {
    std::string out = "\"";
    for (const char c : bytes) {
        const auto b = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (b < 0x20 || b == 0x7F) {
            out += fmt::format("\\x{:02X}", b);
        } else {
            out += c;
        }
    }
    return out + "\"";
}

class Converter {
public:
    explicit Converter(const JsonValue& root) : root_(root) {}

    std::string run() {
        const std::string root = visit(root_, "root");
        std::string out = fmt::format("root ::= {}\n", root);
        for (const auto& [name, body] : rules_) {
            out += fmt::format("{} ::= {}\n", name, body);
        }
        for (const Primitive& p : kPrimitives) {
            if (used_.contains(p.name)) {
                out += fmt::format("{} ::= {}\n", p.name, p.body);
            }
        }
        return out;
    }

private:
    // A primitive rule by name, with those it needs.
    std::string use(std::string_view name) {
        if (used_.insert(std::string(name)).second) {
            for (const Primitive& p : kPrimitives) {
                if (p.name == name) {
                    for (const std::string_view u : p.uses) {
                        use(u);
                    }
                }
            }
        }
        return std::string(name);
    }

    std::string add_rule(std::string_view hint, std::string body) {
        std::string name;
        for (const char c : hint) {
            const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
            name += ok ? c : '-';
        }
        name = fmt::format("{}-{}", name.empty() ? "r" : name.substr(0, 40), rules_.size());
        rules_.emplace_back(name, std::move(body));
        return name;
    }

    static void check_keywords(const JsonValue& schema) {
        std::vector<std::string> unsupported;
        for (const JsonMember& m : schema.as_object()) {
            if (!kSupported.contains(m.key) && !kAnnotations.contains(m.key)) {
                unsupported.push_back(fmt::format("'{}'", m.key));
            }
        }
        if (!unsupported.empty()) {
            schema.fail(fmt::format("JSON schema keyword{} {} {} not supported (docs/SERVER.md lists the subset)",
                                    unsupported.size() > 1 ? "s" : "", fmt::join(unsupported, ", "),
                                    unsupported.size() > 1 ? "are" : "is"));
        }
    }

    std::string visit(const JsonValue& schema, std::string_view hint) {
        if (schema.is_bool()) {
            if (!schema.as_bool()) {
                schema.fail("the schema false allows no value");
            }
            return use("value");
        }
        if (!schema.is_object()) {
            schema.fail("a schema must be an object or a boolean");
        }
        check_keywords(schema);
        if (const JsonValue* ref = schema.find("$ref")) {
            return reference(*ref);
        }
        if (const JsonValue* c = schema.find("const")) {
            return fmt::format("{} {}", literal(to_nlohmann(*c).dump()), use("space"));
        }
        if (const JsonValue* e = schema.find("enum")) {
            if (e->size() == 0) {
                e->fail("an empty enum allows no value");
            }
            std::vector<std::string> alternatives;
            for (const JsonValue& v : e->as_array()) {
                alternatives.push_back(literal(to_nlohmann(v).dump()));
            }
            return fmt::format("({}) {}", fmt::join(alternatives, " | "), use("space"));
        }
        for (const char* key : {"anyOf", "oneOf"}) {
            if (const JsonValue* branches = schema.find(key)) {
                if (branches->size() == 0) {
                    branches->fail("an empty list of schemas allows no value");
                }
                std::vector<std::string> alternatives;
                for (const JsonValue& b : branches->as_array()) {
                    alternatives.push_back(visit(b, hint));
                }
                return add_rule(hint, fmt::format("{}", fmt::join(alternatives, " | ")));
            }
        }
        const JsonValue* type = schema.find("type");
        if (type == nullptr) {
            if (schema.find("properties") != nullptr || schema.find("additionalProperties") != nullptr ||
                schema.find("required") != nullptr) {
                return object(schema, hint);
            }
            if (schema.find("items") != nullptr) {
                return array(schema, hint);
            }
            return use("value");
        }
        if (type->is_array()) {
            if (type->size() == 0) {
                type->fail("an empty list of types allows no value");
            }
            std::vector<std::string> alternatives;
            for (const JsonValue& t : type->as_array()) {
                alternatives.push_back(typed(schema, t, hint));
            }
            return add_rule(hint, fmt::format("{}", fmt::join(alternatives, " | ")));
        }
        return typed(schema, *type, hint);
    }

    std::string typed(const JsonValue& schema, const JsonValue& type, std::string_view hint) {
        const std::string& t = type.as_string();
        if (t == "object") {
            return object(schema, hint);
        }
        if (t == "array") {
            return array(schema, hint);
        }
        if (t == "string") {
            return string(schema, hint);
        }
        if (t == "number" || t == "integer" || t == "boolean" || t == "null") {
            return use(t);
        }
        type.fail(fmt::format("unknown type '{}' (object, array, string, number, integer, boolean or null)", t));
    }

    static std::optional<std::uint32_t> count(const JsonValue& schema, std::string_view key) {
        const JsonValue* v = schema.find(key);
        if (v == nullptr) {
            return std::nullopt;
        }
        return v->as_integer<std::uint32_t>();
    }

    // "{m,n}" for a repetition of low..high (high absent: unbounded).
    static std::string repetition(std::uint32_t low, std::optional<std::uint32_t> high, const JsonValue& schema) {
        if (high && *high < low) {
            schema.fail(fmt::format("a minimum of {} above the maximum of {} allows no value", low, *high));
        }
        return high ? fmt::format("{{{},{}}}", low, *high) : fmt::format("{{{},}}", low);
    }

    std::string string(const JsonValue& schema, std::string_view hint) {
        const std::optional<std::uint32_t> low = count(schema, "minLength");
        const std::optional<std::uint32_t> high = count(schema, "maxLength");
        if (!low && !high) {
            return use("string");
        }
        return add_rule(hint, fmt::format(R"("\"" {}{} "\"" {})", use("char"),
                                          repetition(low.value_or(0), high, schema), use("space")));
    }

    std::string array(const JsonValue& schema, std::string_view hint) {
        const JsonValue* items = schema.find("items");
        const std::string item = items == nullptr ? use("value") : visit(*items, fmt::format("{}-item", hint));
        const std::uint32_t low = count(schema, "minItems").value_or(0);
        const std::optional<std::uint32_t> high = count(schema, "maxItems");
        const std::string space = use("space");
        if (high && *high == 0) {
            repetition(low, high, schema);
            return add_rule(hint, fmt::format(R"("[" {} "]" {})", space, space));
        }
        const std::string rest =
            repetition(low == 0 ? 0 : low - 1, high ? std::optional(*high - 1) : std::nullopt, schema);
        const std::string list = fmt::format(R"({} ("," {} {}){})", item, space, item, rest);
        return add_rule(hint,
                        fmt::format(R"("[" {} {} "]" {})", space, low == 0 ? fmt::format("({})?", list) : list, space));
    }

    std::string object(const JsonValue& schema, std::string_view hint) {
        const std::string space = use("space");
        const JsonValue* properties = schema.find("properties");
        const JsonValue* required = schema.find("required");
        const JsonValue* additional = schema.find("additionalProperties");
        std::vector<std::string> names;
        std::map<std::string, const JsonValue*> by_name;
        if (properties != nullptr) {
            for (const JsonMember& m : properties->as_object()) {
                names.push_back(m.key);
                by_name[m.key] = &m.value;
            }
        }
        std::set<std::string> needed;
        if (required != nullptr) {
            for (const JsonValue& r : required->as_array()) {
                if (needed.insert(r.as_string()).second && !by_name.contains(r.as_string())) {
                    names.push_back(r.as_string());
                    by_name[r.as_string()] = nullptr;
                }
            }
        }
        if (names.empty()) {
            if (additional != nullptr && additional->is_bool() && !additional->as_bool()) {
                return add_rule(hint, fmt::format(R"("{{" {} "}}" {})", space, space));
            }
            if (additional == nullptr || additional->is_bool()) {
                return use("object");
            }
            const std::string value = visit(*additional, fmt::format("{}-value", hint));
            const std::string pair = fmt::format(R"({} ":" {} {})", use("string"), space, value);
            return add_rule(hint,
                            fmt::format(R"("{{" {} ({} ("," {} {})*)? "}}" {})", space, pair, space, pair, space));
        }
        if (additional != nullptr && !additional->is_bool()) {
            visit(*additional, fmt::format("{}-value", hint));  // checked, though only declared ones are made
        }
        std::vector<std::string> pairs;  // "name": value, in order: required first
        std::vector<bool> optional;
        for (const bool want_required : {true, false}) {
            for (const std::string& name : names) {
                if (needed.contains(name) != want_required) {
                    continue;
                }
                const JsonValue* value = by_name[name];
                const std::string rule =
                    value == nullptr ? use("value") : visit(*value, fmt::format("{}-{}", hint, name));
                pairs.push_back(
                    fmt::format("{} {} \":\" {} {}", literal(nlohmann::json(name).dump()), space, space, rule));
                optional.push_back(!want_required);
            }
        }
        std::string body;
        std::size_t i = 0;
        for (; i < pairs.size() && !optional[i]; ++i) {
            body += i == 0 ? pairs[i] : fmt::format(R"( "," {} {})", space, pairs[i]);
        }
        if (i > 0 && i < pairs.size()) {
            body += " " + rest_from(hint, pairs, i, space);
        } else if (i == 0) {
            // No required pair: the first present one has no comma before it.
            // first_k ::= pair_k rest_(k+1) | first_(k+1), the last first_ empty.
            std::string first;
            for (std::size_t k = pairs.size(); k-- > 0;) {
                first = add_rule(fmt::format("{}-first", hint),
                                 fmt::format("{} {} | {}", pairs[k], rest_from(hint, pairs, k + 1, space),
                                             first.empty() ? "\"\"" : first));
            }
            body = first;
        }
        return add_rule(hint, fmt::format(R"("{{" {} {} "}}" {})", space, body, space));
    }

    // The rule of optional pairs k.. each after a comma (memoized per object by its text).
    std::string rest_from(std::string_view hint, const std::vector<std::string>& pairs, std::size_t k,
                          const std::string& space) {
        std::string rest;
        for (std::size_t j = pairs.size(); j-- > k;) {
            const std::string body = fmt::format(R"(("," {} {})? {})", space, pairs[j], rest);
            const auto it = rest_rules_.find(body);
            rest =
                it != rest_rules_.end() ? it->second : rest_rules_[body] = add_rule(fmt::format("{}-rest", hint), body);
        }
        return rest;
    }

    std::string reference(const JsonValue& ref) {
        const std::string& target = ref.as_string();
        const auto it = refs_.find(target);
        if (it != refs_.end()) {
            return it->second;
        }
        const JsonValue* defs = nullptr;
        std::string name;
        for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
            if (target.starts_with(prefix)) {
                defs = root_.is_object()
                           ? root_.find(std::string_view(prefix).substr(2, std::string_view(prefix).size() - 3))
                           : nullptr;
                name = target.substr(std::string_view(prefix).size());
            }
        }
        const JsonValue* def = defs != nullptr && defs->is_object() ? defs->find(name) : nullptr;
        if (def == nullptr) {
            ref.fail(fmt::format("$ref '{}' is not a schema of this document's $defs or definitions", target));
        }
        // Named before it is visited, so that a recursive schema refers to its own rule.
        const std::string rule = add_rule(fmt::format("ref-{}", name), "");
        refs_[target] = rule;
        const std::string body = visit(*def, rule);
        for (auto& [n, b] : rules_) {
            if (n == rule) {
                b = body;
            }
        }
        return rule;
    }

    const JsonValue& root_;
    std::vector<std::pair<std::string, std::string>> rules_;
    std::set<std::string, std::less<>> used_;
    std::map<std::string, std::string> refs_;
    std::map<std::string, std::string> rest_rules_;
};

}  // namespace

std::string json_schema_to_gbnf(const JsonValue& schema) {
    return Converter(schema).run();
}

std::string json_object_gbnf() {
    return "root ::= object\n" + [] {
        std::string out;
        for (const Primitive& p : kPrimitives) {
            if (p.name != "integer") {
                out += fmt::format("{} ::= {}\n", p.name, p.body);
            }
        }
        return out;
    }();
}

}  // namespace vkf::grammar
