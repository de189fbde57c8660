#include "runtime/json_writer.hpp"

#include "runtime/error.hpp"

#include <charconv>
#include <cmath>
#include <ostream>
#include <string>

namespace vkf {

namespace {

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD"; // U+FFFD in UTF-8

bool in(unsigned char c, unsigned char lo, unsigned char hi) { return c >= lo && c <= hi; }

// Length of the well-formed UTF-8 sequence starting at text[i] (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), or 0 when the bytes there are not one.
std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
    auto byte = [&](std::size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0; };
    const unsigned char b0 = byte(0);
    auto continuation = [&](std::size_t k) { return in(byte(k), 0x80, 0xBF); };
    if (b0 < 0x80) {
        return 1;
    }
    if (in(b0, 0xC2, 0xDF)) {
        return continuation(1) ? 2 : 0;
    }
    if (in(b0, 0xE0, 0xEF)) {
        // The second byte's range excludes overlong forms (E0) and surrogates (ED).
        const unsigned char lo = b0 == 0xE0 ? 0xA0 : 0x80;
        const unsigned char hi = b0 == 0xED ? 0x9F : 0xBF;
        return in(byte(1), lo, hi) && continuation(2) ? 3 : 0;
    }
    if (in(b0, 0xF0, 0xF4)) {
        // Likewise overlong forms (F0) and code points above U+10FFFF (F4).
        const unsigned char lo = b0 == 0xF0 ? 0x90 : 0x80;
        const unsigned char hi = b0 == 0xF4 ? 0x8F : 0xBF;
        return in(byte(1), lo, hi) && continuation(2) && continuation(3) ? 4 : 0;
    }
    return 0;
}

// The escape for an ASCII character JSON does not allow raw in a string, or empty.
std::string_view escape_for(unsigned char c, char (&buffer)[7]) {
    switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
    }
    // DEL is legal raw JSON but, like the C0 controls, invisible in a terminal.
    if (c < 0x20 || c == 0x7F) {
        static constexpr char digits[] = "0123456789abcdef";
        buffer[0] = '\\';
        buffer[1] = 'u';
        buffer[2] = '0';
        buffer[3] = '0';
        buffer[4] = digits[c >> 4];
        buffer[5] = digits[c & 15];
        buffer[6] = '\0';
        return std::string_view(buffer, 6);
    }
    return {};
}

} // namespace

JsonWriter::JsonWriter(std::ostream& out, JsonStyle style) : out_(out), style_(style) {}

JsonWriter& JsonWriter::begin_object() {
    before_value("an object");
    write_raw("{");
    stack_.push_back(Frame{.scope = Scope::Object});
    return *this;
}

JsonWriter& JsonWriter::end_object() {
    close(Scope::Object, '}');
    return *this;
}

JsonWriter& JsonWriter::begin_array() {
    before_value("an array");
    write_raw("[");
    stack_.push_back(Frame{.scope = Scope::Array});
    return *this;
}

JsonWriter& JsonWriter::end_array() {
    close(Scope::Array, ']');
    return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
    if (stack_.empty() || stack_.back().scope != Scope::Object) {
        throw Error("JsonWriter: key \"" + std::string(name) + "\" outside an object");
    }
    Frame& frame = stack_.back();
    if (frame.has_key) {
        throw Error("JsonWriter: key \"" + std::string(name) + "\" follows another key without a value");
    }
    if (frame.count > 0) {
        write_raw(",");
    }
    newline_and_indent();
    write_string(name);
    write_raw(style_ == JsonStyle::Pretty ? ": " : ":");
    frame.has_key = true;
    return *this;
}

JsonWriter& JsonWriter::value(std::string_view text) {
    before_value("a string");
    write_string(text);
    after_value();
    return *this;
}

JsonWriter& JsonWriter::value(const char* text) {
    if (text == nullptr) {
        return null();
    }
    return value(std::string_view(text));
}

JsonWriter& JsonWriter::value(bool b) {
    before_value("a bool");
    write_raw(b ? "true" : "false");
    after_value();
    return *this;
}

JsonWriter& JsonWriter::value(double number) {
    if (!std::isfinite(number)) {
        return null();
    }
    before_value("a number");
    char buffer[32]; // the longest shortest-round-trip double is 24 characters
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), number);
    if (ec != std::errc()) {
        throw Error("JsonWriter: cannot format a double");
    }
    write_raw(std::string_view(buffer, static_cast<std::size_t>(end - buffer)));
    after_value();
    return *this;
}

JsonWriter& JsonWriter::null() {
    before_value("null");
    write_raw("null");
    after_value();
    return *this;
}

JsonWriter& JsonWriter::write_signed(std::int64_t number) {
    before_value("a number");
    char buffer[24];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), number);
    (void)ec; // 24 characters always hold a 64-bit integer
    write_raw(std::string_view(buffer, static_cast<std::size_t>(end - buffer)));
    after_value();
    return *this;
}

JsonWriter& JsonWriter::write_unsigned(std::uint64_t number) {
    before_value("a number");
    char buffer[24];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), number);
    (void)ec;
    write_raw(std::string_view(buffer, static_cast<std::size_t>(end - buffer)));
    after_value();
    return *this;
}

void JsonWriter::finish() const {
    if (!stack_.empty()) {
        throw Error(std::string("JsonWriter: document ends inside an unclosed ") +
                    (stack_.back().scope == Scope::Object ? "object" : "array") + " (" +
                    std::to_string(stack_.size()) + " level(s) open)");
    }
    if (!done_) {
        throw Error("JsonWriter: document is empty");
    }
    if (!out_) {
        throw Error("JsonWriter: writing the document failed");
    }
}

void JsonWriter::before_value(const char* what) {
    if (done_) {
        throw Error(std::string("JsonWriter: ") + what + " after the complete top-level value");
    }
    if (stack_.empty()) {
        return;
    }
    Frame& frame = stack_.back();
    if (frame.scope == Scope::Object) {
        if (!frame.has_key) {
            throw Error(std::string("JsonWriter: ") + what + " inside an object without a key");
        }
        frame.has_key = false; // key() already wrote the separator
        return;
    }
    if (frame.count > 0) {
        write_raw(",");
    }
    newline_and_indent();
}

void JsonWriter::after_value() {
    if (stack_.empty()) {
        done_ = true;
    } else {
        ++stack_.back().count;
    }
}

void JsonWriter::newline_and_indent() {
    if (style_ != JsonStyle::Pretty) {
        return;
    }
    out_.put('\n');
    for (std::size_t i = 0; i < stack_.size(); ++i) {
        write_raw("  ");
    }
}

void JsonWriter::close(Scope scope, char bracket) {
    const char* name = scope == Scope::Object ? "end_object" : "end_array";
    if (stack_.empty()) {
        throw Error(std::string("JsonWriter: ") + name + " without a matching begin");
    }
    const Frame frame = stack_.back();
    if (frame.scope != scope) {
        throw Error(std::string("JsonWriter: ") + name + " closes an " +
                    (frame.scope == Scope::Object ? "object" : "array"));
    }
    if (frame.has_key) {
        throw Error(std::string("JsonWriter: ") + name + " after a key without a value");
    }
    stack_.pop_back();
    if (frame.count > 0) {
        newline_and_indent(); // empty containers stay on one line: {} and []
    }
    out_.put(bracket);
    after_value();
}

void JsonWriter::write_string(std::string_view text) {
    out_.put('"');
    std::size_t run = 0; // start of the bytes not yet written that need no escaping
    char buffer[7];
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        const std::size_t length = utf8_sequence_length(text, i);
        const std::string_view escape = length == 1 ? escape_for(c, buffer) : std::string_view{};
        if (length != 0 && escape.empty()) {
            i += length;
            continue;
        }
        write_raw(text.substr(run, i - run));
        write_raw(length == 0 ? kReplacementCharacter : escape);
        ++i;
        run = i;
    }
    write_raw(text.substr(run));
    out_.put('"');
}

void JsonWriter::write_raw(std::string_view text) { out_.write(text.data(), static_cast<std::streamsize>(text.size())); }

} // namespace vkf
