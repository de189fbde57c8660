// Fuzzes the strict JSON reader (parse_json, host/io/json.hpp) under every JSON file a user
// hands vkformer: config.json, the sharded index, safetensors headers, tokenizer.json and
// vkf-bench result files. An accepted document must convert to nlohmann-json, write out
// (json_text, both styles) and read back to the same document, and every value must answer
// its typed accessors and report its location without failing anything but a vkf::Error.

#include "host/io/json.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <cstddef>
#include <cstdint>

namespace {

using vkf::JsonKind;
using vkf::JsonValue;

void visit(const JsonValue& v, std::uint64_t& sum) {
    sum += v.location().size();
    switch (v.kind()) {
        case JsonKind::Null:
            break;
        case JsonKind::Bool:
            sum += v.as_bool();
            break;
        case JsonKind::Number:
            sum += static_cast<std::uint64_t>(v.as_double() != 0.0);
            vkf::fuzz::run_parser([&] { sum += static_cast<std::uint64_t>(v.as_int64()); });
            vkf::fuzz::run_parser([&] { sum += v.as_uint64(); });
            vkf::fuzz::run_parser([&] { sum += v.as_integer<std::uint32_t>(); });
            vkf::fuzz::run_parser([&] { sum += static_cast<std::uint64_t>(v.as_integer<std::int16_t>()); });
            break;
        case JsonKind::String:
            sum += v.as_string().size();
            break;
        case JsonKind::Array:
            for (const JsonValue& e : v.as_array()) {
                visit(e, sum);
            }
            vkf::fuzz::run_parser([&] { v.at(v.size()); });  // refused: past the end
            break;
        case JsonKind::Object:
            for (const vkf::JsonMember& m : v.as_object()) {
                vkf::fuzz::check(v.find(m.key) == &m.value, "find returns the member of that key");
                visit(m.value, sum);
            }
            break;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vkf;
    fuzz::run_parser([&] {
        const JsonValue document = parse_json(fuzz::as_text(data, size), "fuzz.json");
        std::uint64_t sum = 0;
        visit(document, sum);
        fuzz::sink(sum);
        const nlohmann::ordered_json copy = to_nlohmann(document);
        for (const JsonStyle style : {JsonStyle::Pretty, JsonStyle::Compact}) {
            const std::string text = json_text(copy, style);
            fuzz::check(to_nlohmann(parse_json(text, "written.json")) == copy,
                        "json_text writes a document that reads back the same");
        }
    });
    return 0;
}
