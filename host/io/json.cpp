#include "host/io/json.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <system_error>
#include <unordered_set>
#include <utility>

#include "runtime/error.hpp"

namespace vkf {
namespace {

// Integers up to 2^53 are exactly representable as doubles; beyond, an integral double
// may stand for many integer literals, so it is not reported as an exact integer.
constexpr double kMaxExactDouble = 9007199254740992.0;

std::string format_double(double value) {
    char buffer[32];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, result.ptr);
}

std::string describe(const JsonValue& value) {
    switch (value.kind()) {
        case JsonKind::Number:
            return "number " + format_double(value.as_double());
        case JsonKind::Bool:
            return value.as_bool() ? "true" : "false";
        default:
            return std::string(json_kind_name(value.kind()));
    }
}

std::string child_path(const std::string& parent, std::string_view key) {
    return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

std::string element_path(const std::string& parent, std::size_t index) {
    return parent + "[" + std::to_string(index) + "]";
}

bool in_range(unsigned char c, unsigned char lo, unsigned char hi) {
    return c >= lo && c <= hi;
}

// Length of the well-formed UTF-8 sequence (RFC 3629) at text[pos] whose first byte is
// >= 0x80, or 0 when the bytes there are not one: a stray continuation byte, an overlong
// form, an encoded surrogate, a code point above U+10FFFF or a truncated sequence.
std::size_t multibyte_utf8_length(std::string_view text, std::size_t pos) {
    const auto at = [&](std::size_t k) -> unsigned char {
        return pos + k < text.size() ? static_cast<unsigned char>(text[pos + k]) : 0;
    };
    const auto continuation = [&](std::size_t k) { return in_range(at(k), 0x80, 0xbf); };
    const unsigned char lead = at(0);
    if (in_range(lead, 0xc2, 0xdf)) {
        return continuation(1) ? 2 : 0;
    }
    if (in_range(lead, 0xe0, 0xef)) {
        // After E0 only A0..BF avoids overlong forms; after ED only 80..9F avoids surrogates.
        const unsigned char lo = lead == 0xe0 ? 0xa0 : 0x80;
        const unsigned char hi = lead == 0xed ? 0x9f : 0xbf;
        return in_range(at(1), lo, hi) && continuation(2) ? 3 : 0;
    }
    if (in_range(lead, 0xf0, 0xf4)) {
        // After F0 only 90..BF avoids overlong forms; after F4 only 80..8F stays <= U+10FFFF.
        const unsigned char lo = lead == 0xf0 ? 0x90 : 0x80;
        const unsigned char hi = lead == 0xf4 ? 0x8f : 0xbf;
        return in_range(at(1), lo, hi) && continuation(2) && continuation(3) ? 4 : 0;
    }
    return 0;
}

// The power of ten of the leading non-zero digit of a valid JSON number literal, which
// tells an overflowing literal from an underflowing one. Saturates instead of
// overflowing for absurd exponents.
std::int64_t decimal_exponent(std::string_view literal) {
    constexpr std::int64_t kLimit = std::int64_t{1} << 40;
    std::size_t pos = literal.front() == '-' ? 1 : 0;
    const std::size_t mantissa_end = std::min(literal.find_first_of("eE"), literal.size());
    const std::string_view mantissa = literal.substr(pos, mantissa_end - pos);
    const std::size_t point = std::min(mantissa.find('.'), mantissa.size());
    std::int64_t exponent = 0;
    const std::size_t first_nonzero = mantissa.find_first_of("123456789");
    if (first_nonzero == std::string_view::npos) {
        return std::numeric_limits<std::int64_t>::min();  // zero
    }
    exponent = first_nonzero < point ? static_cast<std::int64_t>(point - first_nonzero - 1)
                                     : -static_cast<std::int64_t>(first_nonzero - point);
    if (mantissa_end < literal.size()) {
        pos = mantissa_end + 1;
        const bool negative = literal[pos] == '-';
        if (literal[pos] == '-' || literal[pos] == '+') {
            ++pos;
        }
        std::int64_t written = 0;
        for (; pos < literal.size() && written < kLimit; ++pos) {
            written = written * 10 + (literal[pos] - '0');
        }
        exponent += negative ? -written : written;
    }
    return exponent;
}

void append_utf8(std::string& out, std::uint32_t code_point) {
    if (code_point < 0x80) {
        out.push_back(static_cast<char>(code_point));
    } else if (code_point < 0x800) {
        out.push_back(static_cast<char>(0xc0 | (code_point >> 6)));
        out.push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
    } else if (code_point < 0x10000) {
        out.push_back(static_cast<char>(0xe0 | (code_point >> 12)));
        out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3f)));
        out.push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
    } else {
        out.push_back(static_cast<char>(0xf0 | (code_point >> 18)));
        out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3f)));
        out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3f)));
        out.push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
    }
}

}  // namespace

std::string_view json_kind_name(JsonKind kind) {
    switch (kind) {
        case JsonKind::Null:
            return "null";
        case JsonKind::Bool:
            return "boolean";
        case JsonKind::Number:
            return "number";
        case JsonKind::String:
            return "string";
        case JsonKind::Array:
            return "array";
        case JsonKind::Object:
            return "object";
    }
    return "unknown";
}

// Recursive descent over the text; positions are byte offsets, turned into line and
// column only when an error is reported.
class JsonParser {
public:
    JsonParser(std::string_view text, std::shared_ptr<const std::string> source, std::size_t max_depth)
        : text_(text), source_(std::move(source)), max_depth_(max_depth) {}

    JsonValue parse_document() {
        if (text_.starts_with("\xef\xbb\xbf")) {
            error("a byte order mark is not allowed in JSON (RFC 8259, section 8.1)");
        }
        skip_whitespace();
        if (at_end()) {
            error("empty document: expected a JSON value");
        }
        JsonValue root = parse_value("", 0);
        skip_whitespace();
        if (!at_end()) {
            error("unexpected " + describe_current() + " after the end of the document");
        }
        return root;
    }

private:
    [[noreturn]] void error(const std::string& problem) const {
        std::size_t line = 1;
        std::size_t line_start = 0;
        for (std::size_t i = 0; i < pos_ && i < text_.size(); ++i) {
            if (text_[i] == '\n') {
                ++line;
                line_start = i + 1;
            }
        }
        throw Error(*source_ + ": line " + std::to_string(line) + ", column " + std::to_string(pos_ - line_start + 1) +
                    ": " + problem);
    }

    bool at_end() const { return pos_ >= text_.size(); }

    char current() const { return text_[pos_]; }

    std::string describe_current() const {
        if (at_end()) {
            return "end of input";
        }
        const auto c = static_cast<unsigned char>(current());
        if (c >= 0x21 && c < 0x7f) {
            return std::string("character '") + static_cast<char>(c) + "'";
        }
        constexpr char kHex[] = "0123456789abcdef";
        return std::string("byte 0x") + kHex[c >> 4] + kHex[c & 0xf];
    }

    void skip_whitespace() {
        while (!at_end() && (current() == ' ' || current() == '\t' || current() == '\n' || current() == '\r')) {
            ++pos_;
        }
    }

    JsonValue make(std::string path) const {
        JsonValue value;
        value.path_ = std::move(path);
        value.source_ = source_;
        return value;
    }

    JsonValue parse_value(std::string path, std::size_t depth) {
        if (at_end()) {
            error("unexpected end of input: expected a value");
        }
        switch (current()) {
            case '{':
                return parse_object(std::move(path), depth);
            case '[':
                return parse_array(std::move(path), depth);
            case '"': {
                JsonValue value = make(std::move(path));
                value.data_ = parse_string();
                return value;
            }
            case 't':
                return parse_literal(std::move(path), "true", true);
            case 'f':
                return parse_literal(std::move(path), "false", false);
            case 'n':
                return parse_literal(std::move(path), "null", std::monostate{});
            default:
                break;
        }
        if (current() == '-' || (current() >= '0' && current() <= '9')) {
            JsonValue value = make(std::move(path));
            value.data_ = parse_number();
            return value;
        }
        error("unexpected " + describe_current() + ": expected a value");
    }

    template <class T>
    JsonValue parse_literal(std::string path, std::string_view word, T data) {
        if (text_.substr(pos_, word.size()) != word) {
            error("unexpected " + describe_current() + ": expected a value");
        }
        pos_ += word.size();
        JsonValue value = make(std::move(path));
        value.data_ = data;
        return value;
    }

    void enter(std::size_t depth) const {
        if (depth >= max_depth_) {
            error("nesting deeper than " + std::to_string(max_depth_) + " arrays and objects");
        }
    }

    JsonValue parse_array(std::string path, std::size_t depth) {
        enter(depth);
        ++pos_;  // '['
        JsonValue::Array elements;
        skip_whitespace();
        if (!at_end() && current() == ']') {
            ++pos_;
        } else {
            while (true) {
                skip_whitespace();
                elements.push_back(parse_value(element_path(path, elements.size()), depth + 1));
                skip_whitespace();
                if (!at_end() && current() == ',') {
                    ++pos_;
                    continue;
                }
                if (!at_end() && current() == ']') {
                    ++pos_;
                    break;
                }
                error("unexpected " + describe_current() + ": expected ',' or ']' after an array element");
            }
        }
        JsonValue value = make(std::move(path));
        value.data_ = std::move(elements);
        return value;
    }

    JsonValue parse_object(std::string path, std::size_t depth) {
        enter(depth);
        ++pos_;  // '{'
        JsonValue::Object members;
        std::unordered_set<std::string> keys;
        skip_whitespace();
        if (!at_end() && current() == '}') {
            ++pos_;
        } else {
            while (true) {
                skip_whitespace();
                if (at_end() || current() != '"') {
                    error("unexpected " + describe_current() + ": expected a string key");
                }
                const std::size_t key_pos = pos_;
                std::string key = parse_string();
                if (!keys.insert(key).second) {
                    pos_ = key_pos;
                    error("duplicate key '" + key + "'");
                }
                skip_whitespace();
                if (at_end() || current() != ':') {
                    error("unexpected " + describe_current() + ": expected ':' after the key '" + key + "'");
                }
                ++pos_;
                skip_whitespace();
                JsonValue member = parse_value(child_path(path, key), depth + 1);
                members.push_back(JsonMember{.key = std::move(key), .value = std::move(member)});
                skip_whitespace();
                if (!at_end() && current() == ',') {
                    ++pos_;
                    continue;
                }
                if (!at_end() && current() == '}') {
                    ++pos_;
                    break;
                }
                error("unexpected " + describe_current() + ": expected ',' or '}' after an object member");
            }
        }
        JsonValue value = make(std::move(path));
        value.data_ = std::move(members);
        return value;
    }

    std::uint32_t parse_hex4() {
        std::uint32_t code_unit = 0;
        for (int i = 0; i < 4; ++i) {
            if (at_end()) {
                error("unterminated \\u escape");
            }
            const char c = current();
            std::uint32_t digit = 0;
            if (c >= '0' && c <= '9') {
                digit = static_cast<std::uint32_t>(c - '0');
            } else if (c >= 'a' && c <= 'f') {
                digit = static_cast<std::uint32_t>(c - 'a' + 10);
            } else if (c >= 'A' && c <= 'F') {
                digit = static_cast<std::uint32_t>(c - 'A' + 10);
            } else {
                error("unexpected " + describe_current() + " in a \\u escape: expected a hexadecimal digit");
            }
            code_unit = code_unit * 16 + digit;
            ++pos_;
        }
        return code_unit;
    }

    // Called after "\u": a BMP code point, or a UTF-16 surrogate pair spelled as two escapes.
    std::uint32_t parse_unicode_escape() {
        const std::size_t escape_pos = pos_ - 2;
        const std::uint32_t first = parse_hex4();
        if (first >= 0xdc00 && first <= 0xdfff) {
            pos_ = escape_pos;
            error("unpaired low surrogate in \\u escape");
        }
        if (first < 0xd800 || first > 0xdbff) {
            return first;
        }
        if (text_.substr(pos_, 2) != "\\u") {
            pos_ = escape_pos;
            error("high surrogate \\u escape not followed by a low surrogate escape");
        }
        pos_ += 2;
        const std::uint32_t second = parse_hex4();
        if (second < 0xdc00 || second > 0xdfff) {
            pos_ = escape_pos;
            error("high surrogate \\u escape not followed by a low surrogate escape");
        }
        return 0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00);
    }

    std::string parse_string() {
        const std::size_t start = pos_;
        ++pos_;  // opening quote
        std::string out;
        while (true) {
            // Copy the run of characters that need no attention in one go.
            const std::size_t run_start = pos_;
            while (!at_end()) {
                const auto c = static_cast<unsigned char>(current());
                if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) {
                    break;
                }
                ++pos_;
            }
            out.append(text_.substr(run_start, pos_ - run_start));
            if (at_end()) {
                pos_ = start;
                error("unterminated string");
            }
            const auto c = static_cast<unsigned char>(current());
            if (c == '"') {
                ++pos_;
                return out;
            }
            if (c < 0x20) {
                error("raw control character (" + describe_current() + ") in a string: it must be escaped");
            }
            if (c >= 0x80) {
                const std::size_t length = multibyte_utf8_length(text_, pos_);
                if (length == 0) {
                    error("invalid UTF-8 (" + describe_current() + ") in a string");
                }
                out.append(text_.substr(pos_, length));
                pos_ += length;
                continue;
            }
            // A backslash.
            ++pos_;
            if (at_end()) {
                error("unterminated escape sequence");
            }
            const char escape = current();
            ++pos_;
            switch (escape) {
                case '"':
                    out.push_back('"');
                    break;
                case '\\':
                    out.push_back('\\');
                    break;
                case '/':
                    out.push_back('/');
                    break;
                case 'b':
                    out.push_back('\b');
                    break;
                case 'f':
                    out.push_back('\f');
                    break;
                case 'n':
                    out.push_back('\n');
                    break;
                case 'r':
                    out.push_back('\r');
                    break;
                case 't':
                    out.push_back('\t');
                    break;
                case 'u':
                    append_utf8(out, parse_unicode_escape());
                    break;
                default:
                    pos_ -= 2;
                    error("invalid escape sequence in a string (valid: \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
            }
        }
    }

    bool consume_digits() {
        const std::size_t start = pos_;
        while (!at_end() && current() >= '0' && current() <= '9') {
            ++pos_;
        }
        return pos_ > start;
    }

    JsonValue::Number parse_number() {
        const std::size_t start = pos_;
        if (current() == '-') {
            ++pos_;
        }
        if (at_end() || current() < '0' || current() > '9') {
            error("unexpected " + describe_current() + " in a number: expected a digit");
        }
        if (current() == '0') {
            ++pos_;
            if (!at_end() && current() >= '0' && current() <= '9') {
                error("leading zeros are not allowed in a number");
            }
        } else {
            consume_digits();
        }
        bool integer_literal = true;
        if (!at_end() && current() == '.') {
            integer_literal = false;
            ++pos_;
            if (!consume_digits()) {
                error("unexpected " + describe_current() + " in a number: expected a digit after '.'");
            }
        }
        if (!at_end() && (current() == 'e' || current() == 'E')) {
            integer_literal = false;
            ++pos_;
            if (!at_end() && (current() == '+' || current() == '-')) {
                ++pos_;
            }
            if (!consume_digits()) {
                error("unexpected " + describe_current() + " in a number: expected a digit in the exponent");
            }
        }
        const std::string_view literal = text_.substr(start, pos_ - start);
        const char* first = literal.data();
        const char* last = literal.data() + literal.size();

        JsonValue::Number number;
        const auto parsed = std::from_chars(first, last, number.value);
        if (parsed.ec == std::errc::result_out_of_range) {
            // Overflow is refused; underflow is what any reader would round to zero.
            if (decimal_exponent(literal) > 0) {
                pos_ = start;
                error("number " + std::string(literal) + " is out of the range of a double");
            }
            number.value = literal.front() == '-' ? -0.0 : 0.0;
        } else if (parsed.ec != std::errc() || parsed.ptr != last) {
            pos_ = start;
            error("unparsable number " + std::string(literal));
        }

        if (integer_literal) {
            // Exact 64-bit values straight from the digits, not via the rounded double.
            if (literal.front() == '-') {
                std::int64_t value = 0;
                const auto result = std::from_chars(first, last, value);
                if (result.ec == std::errc() && result.ptr == last) {
                    number.has_int64 = true;
                    number.int64 = value;
                    if (value == 0) {
                        number.has_uint64 = true;  // "-0"
                    }
                }
            } else {
                std::uint64_t value = 0;
                const auto result = std::from_chars(first, last, value);
                if (result.ec == std::errc() && result.ptr == last) {
                    number.has_uint64 = true;
                    number.uint64 = value;
                    if (value <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
                        number.has_int64 = true;
                        number.int64 = static_cast<std::int64_t>(value);
                    }
                }
            }
        } else if (std::trunc(number.value) == number.value && std::abs(number.value) <= kMaxExactDouble) {
            number.has_int64 = true;
            number.int64 = static_cast<std::int64_t>(number.value);
            if (number.int64 >= 0) {
                number.has_uint64 = true;
                number.uint64 = static_cast<std::uint64_t>(number.int64);
            }
        }
        return number;
    }

    std::string_view text_;
    std::shared_ptr<const std::string> source_;
    std::size_t max_depth_;
    std::size_t pos_ = 0;
};

JsonValue::JsonValue() = default;
JsonValue::JsonValue(const JsonValue&) = default;
JsonValue::JsonValue(JsonValue&&) noexcept = default;
JsonValue& JsonValue::operator=(const JsonValue&) = default;
JsonValue& JsonValue::operator=(JsonValue&&) noexcept = default;
JsonValue::~JsonValue() = default;

JsonKind JsonValue::kind() const {
    switch (data_.index()) {
        case 1:
            return JsonKind::Bool;
        case 2:
            return JsonKind::Number;
        case 3:
            return JsonKind::String;
        case 4:
            return JsonKind::Array;
        case 5:
            return JsonKind::Object;
        default:
            return JsonKind::Null;
    }
}

std::string_view JsonValue::source() const {
    return source_ ? std::string_view(*source_) : std::string_view();
}

std::string JsonValue::location() const {
    if (source().empty()) {
        return path_.empty() ? std::string("JSON value") : path_;
    }
    return path_.empty() ? std::string(source()) : std::string(source()) + ": " + path_;
}

void JsonValue::fail(std::string_view problem) const {
    throw Error(location() + ": " + std::string(problem));
}

void JsonValue::fail_expected(std::string_view expected) const {
    fail("expected " + std::string(expected) + ", got " + describe(*this));
}

void JsonValue::fail_range(std::int64_t min, std::uint64_t max) const {
    fail("expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " + describe(*this));
}

void JsonValue::require(JsonKind kind, std::string_view expected) const {
    if (this->kind() != kind) {
        fail_expected(expected);
    }
}

bool JsonValue::as_bool() const {
    require(JsonKind::Bool, "a boolean");
    return std::get<bool>(data_);
}

double JsonValue::as_double() const {
    require(JsonKind::Number, "a number");
    return std::get<Number>(data_).value;
}

std::int64_t JsonValue::as_int64() const {
    require(JsonKind::Number, "an integer");
    const Number& number = std::get<Number>(data_);
    if (number.has_int64) {
        return number.int64;
    }
    if (number.has_uint64) {
        fail_range(std::numeric_limits<std::int64_t>::min(),
                   static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
    }
    fail_expected("an integer");
}

std::uint64_t JsonValue::as_uint64() const {
    require(JsonKind::Number, "an integer");
    const Number& number = std::get<Number>(data_);
    if (number.has_uint64) {
        return number.uint64;
    }
    fail_expected("a non-negative integer");
}

const std::string& JsonValue::as_string() const {
    require(JsonKind::String, "a string");
    return std::get<std::string>(data_);
}

std::span<const JsonValue> JsonValue::as_array() const {
    require(JsonKind::Array, "an array");
    return std::get<Array>(data_);
}

std::span<const JsonMember> JsonValue::as_object() const {
    require(JsonKind::Object, "an object");
    return std::get<Object>(data_);
}

const JsonValue* JsonValue::find(std::string_view key) const {
    for (const JsonMember& member : as_object()) {
        if (member.key == key) {
            return &member.value;
        }
    }
    return nullptr;
}

const JsonValue& JsonValue::at(std::string_view key) const {
    const JsonValue* value = find(key);
    if (value == nullptr) {
        fail("missing key '" + std::string(key) + "'");
    }
    return *value;
}

const JsonValue& JsonValue::at(std::size_t index) const {
    const std::span<const JsonValue> elements = as_array();
    if (index >= elements.size()) {
        fail("index " + std::to_string(index) + " is out of range for an array of " + std::to_string(elements.size()) +
             " elements");
    }
    return elements[index];
}

std::size_t JsonValue::size() const {
    if (is_array()) {
        return std::get<Array>(data_).size();
    }
    if (is_object()) {
        return std::get<Object>(data_).size();
    }
    fail_expected("an array or an object");
}

JsonValue parse_json(std::string_view text, std::string_view source_name, std::size_t max_depth) {
    return JsonParser(text, std::make_shared<const std::string>(source_name), max_depth).parse_document();
}

JsonValue read_json_file(const std::filesystem::path& path, std::uint64_t max_bytes) {
    std::ifstream file(path, std::ios::binary);
    if (!file) {
        throw Error(path.string() + ": cannot open for reading");
    }
    std::error_code size_error;
    const std::uintmax_t size = std::filesystem::file_size(path, size_error);
    if (size_error) {
        throw Error(path.string() + ": cannot determine the file size: " + size_error.message());
    }
    if (size > max_bytes) {
        throw Error(path.string() + ": " + std::to_string(size) + " bytes is too large for a JSON file (limit " +
                    std::to_string(max_bytes) + ")");
    }
    std::string text(static_cast<std::size_t>(size), '\0');
    if (!file.read(text.data(), static_cast<std::streamsize>(size))) {
        throw Error(path.string() + ": read error");
    }
    return parse_json(text, path.string());
}

}  // namespace vkf
