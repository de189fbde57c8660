#pragma once
// JSON for vkformer: a strict reader (RFC 8259) for the files models come with
// (config.json, model.safetensors.index.json, safetensors headers) and for benchmark
// result files, and the one way documents are written (json_text). nlohmann-json does
// the parsing and the writing; this layer adds what model files need on top.
//
// Reading: these files come from anywhere, so anything that is not JSON is refused with a
// vkf::Error giving the line and column, nesting is limited, and the typed accessors
// name the offending key path ("config.json: attn_config.clip_qkv: expected a number,
// got string") instead of leaving the caller to guess which field was wrong.
//
// Strict means: exactly one value, surrounded only by whitespace; no comments, trailing
// commas, single quotes, NaN or Infinity, byte order mark, leading zeros or raw control
// characters in strings; strings must be valid UTF-8 and \u escapes must pair
// surrogates; an object must not repeat a key (a repeated tensor name in a safetensors
// header would otherwise silently pick one of two tensors).

#include <nlohmann/json.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace vkf {

enum class JsonKind { Null, Bool, Number, String, Array, Object };

// "null", "boolean", "number", "string", "array", "object".
std::string_view json_kind_name(JsonKind kind);

struct JsonMember;
struct JsonDocument;

// One parsed value. It remembers where it came from (the source name given to the
// parser, usually a file name, and its key path in the document) so that every accessor
// can say which value was wrong.
class JsonValue {
public:
    // A JSON number: the double nearest to the literal, plus the exact integer when the
    // literal is an integer that fits 64 bits or the value is integral and exactly
    // representable (2.0, 1e3).
    struct Number {
        double value = 0.0;
        bool has_int64 = false;
        bool has_uint64 = false;
        std::int64_t int64 = 0;
        std::uint64_t uint64 = 0;
    };
    using Array = std::vector<JsonValue>;
    using Object = std::vector<JsonMember>;  // members in document order

    JsonValue();  // null, no source
    JsonValue(const JsonValue&);
    JsonValue(JsonValue&&) noexcept;
    JsonValue& operator=(const JsonValue&);
    JsonValue& operator=(JsonValue&&) noexcept;
    ~JsonValue();

    JsonKind kind() const;
    bool is_null() const { return kind() == JsonKind::Null; }
    bool is_bool() const { return kind() == JsonKind::Bool; }
    bool is_number() const { return kind() == JsonKind::Number; }
    bool is_string() const { return kind() == JsonKind::String; }
    bool is_array() const { return kind() == JsonKind::Array; }
    bool is_object() const { return kind() == JsonKind::Object; }

    // Typed accessors: each throws vkf::Error "<source>: <path>: expected ..., got ..."
    // when the value is of another kind (or, for integers, not integral or out of range).
    bool as_bool() const;
    double as_double() const;
    std::int64_t as_int64() const;
    std::uint64_t as_uint64() const;
    // An integer that fits T exactly (T is not bool).
    template <std::integral T>
    T as_integer() const;
    const std::string& as_string() const;
    std::span<const JsonValue> as_array() const;
    std::span<const JsonMember> as_object() const;

    // Object lookup; both throw unless this is an object. find returns nullptr when the
    // key is absent, at throws "<source>: <path>: missing key 'name'".
    const JsonValue* find(std::string_view key) const;
    const JsonValue& at(std::string_view key) const;
    // Array element; throws when this is not an array or the index is out of range.
    const JsonValue& at(std::size_t index) const;

    // Elements of an array or members of an object; throws for the other kinds.
    std::size_t size() const;

    // Where the value sits: "" for the document itself, "attn_config.clip_qkv",
    // "shape[1]". Keys are joined with '.', array indices written as [i]. Worked out when
    // asked, by walking the document's text again: values carry no copy of their path, so a
    // parsed document costs a bounded multiple of its text (a path per value would cost the
    // text's size again for every element under a long key).
    std::string path() const;
    // The source name given to the parser ("config.json"), or "" for a default value.
    std::string_view source() const;
    // "<source>: <path>" (or less when either is empty), for messages about this value.
    std::string location() const;
    // Throws vkf::Error "<location>: <problem>".
    [[noreturn]] void fail(std::string_view problem) const;

private:
    friend class JsonParser;
    friend nlohmann::ordered_json to_nlohmann(const JsonValue& value);

    [[noreturn]] void fail_expected(std::string_view expected) const;
    void require(JsonKind kind, std::string_view expected) const;
    [[noreturn]] void fail_range(std::int64_t min, std::uint64_t max) const;

    std::variant<std::monostate, bool, Number, std::string, Array, Object> data_;
    std::shared_ptr<const JsonDocument> document_;  // the source name and text; null for a default value
    std::uint64_t ordinal_ = 0;                     // the value's position in document order
};

struct JsonMember {
    std::string key;
    JsonValue value;
};

// Default nesting limit: far deeper than any configuration file, far shallower than
// what would threaten the stack of the recursive parser.
inline constexpr std::size_t kJsonMaxDepth = 128;

// Parses a whole document. source_name ("config.json") starts every error message.
// Throws vkf::Error "<source>: line L, column C: <problem>" for any malformed input;
// columns count bytes from 1.
JsonValue parse_json(std::string_view text, std::string_view source_name, std::size_t max_depth = kJsonMaxDepth);

// Reads and parses a file, with the path as the source name. Refuses files over
// max_bytes (JSON files that come with models are kilobytes to megabytes).
JsonValue read_json_file(const std::filesystem::path& path, std::uint64_t max_bytes = std::uint64_t{256} << 20);

// The value as an nlohmann document, to be written again or compared: integers stay exact
// 64-bit integers, other numbers are doubles.
nlohmann::ordered_json to_nlohmann(const JsonValue& value);

enum class JsonStyle {
    Pretty,   // one member or element per line, 2-space indentation
    Compact,  // no whitespace at all: one document per line (JSON Lines)
};

// The document as text. Strings are written as UTF-8; bytes that are not valid UTF-8 (a
// driver string can hold anything) become U+FFFD so the document stays valid. Doubles are
// written in the shortest form that reads back to the same value; JSON has no NaN or
// infinity, so those are written as null.
std::string json_text(const nlohmann::ordered_json& document, JsonStyle style = JsonStyle::Pretty);

template <std::integral T>
T JsonValue::as_integer() const {
    static_assert(!std::is_same_v<T, bool>, "as_bool reads booleans");
    constexpr auto min = std::numeric_limits<T>::min();
    constexpr auto max = std::numeric_limits<T>::max();
    if constexpr (std::is_signed_v<T>) {
        const std::int64_t value = as_int64();
        if (value < static_cast<std::int64_t>(min) || value > static_cast<std::int64_t>(max)) {
            fail_range(min, static_cast<std::uint64_t>(max));
        }
        return static_cast<T>(value);
    } else {
        const std::uint64_t value = as_uint64();
        if (value > static_cast<std::uint64_t>(max)) {
            fail_range(0, max);
        }
        return static_cast<T>(value);
    }
}

}  // namespace vkf
