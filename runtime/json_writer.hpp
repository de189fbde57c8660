#pragma once
// A streaming JSON writer for machine-readable output (vkf-info --json, benchmark result
// files). It writes straight to a stream, so large documents are never built in memory,
// and it checks the document's structure as it goes: misuse throws vkf::Error instead of
// producing a file that some later reader fails on.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string_view>
#include <type_traits>
#include <vector>

namespace vkf {

enum class JsonStyle {
    Pretty,  // one member or element per line, 2-space indentation
    Compact, // no whitespace at all: one document per line (JSON Lines)
};

class JsonWriter {
public:
    explicit JsonWriter(std::ostream& out, JsonStyle style = JsonStyle::Pretty);
    JsonWriter(const JsonWriter&) = delete;
    JsonWriter& operator=(const JsonWriter&) = delete;

    JsonWriter& begin_object();
    JsonWriter& end_object();
    JsonWriter& begin_array();
    JsonWriter& end_array();
    // Inside an object, every value (including a nested object or array) follows a key.
    JsonWriter& key(std::string_view name);

    // Strings are written as UTF-8; bytes that are not valid UTF-8 (a driver string
    // can hold anything) become U+FFFD so the document stays valid.
    JsonWriter& value(std::string_view text);
    JsonWriter& value(const char* text); // without it a string literal would pick value(bool)
    JsonWriter& value(bool b);
    JsonWriter& value(std::nullptr_t) { return null(); }
    // Finite values in the shortest form that reads back to the same double; JSON has no
    // NaN or infinity, so those are written as null.
    JsonWriter& value(double number);
    // Every integer type (not bool or char) is written exactly, up to 64 bits.
    template <std::integral T>
        requires(!std::same_as<T, bool> && !std::same_as<T, char>)
    JsonWriter& value(T number) {
        if constexpr (std::is_signed_v<T>) {
            return write_signed(number);
        } else {
            return write_unsigned(number);
        }
    }
    JsonWriter& null();

    // key(name) followed by value(v).
    template <class T>
    JsonWriter& field(std::string_view name, const T& v) {
        key(name);
        return value(v);
    }

    // True once one complete top-level value has been written.
    bool complete() const { return done_; }
    // Throws vkf::Error unless the document is complete (an object or array left open).
    void finish() const;

private:
    enum class Scope { Object, Array };
    struct Frame {
        Scope scope;
        std::size_t count = 0;  // members or elements written so far
        bool has_key = false;   // an object member's key is written, its value not yet
    };

    JsonWriter& write_signed(std::int64_t number);
    JsonWriter& write_unsigned(std::uint64_t number);
    // Checks that a value may come here and writes the separator and indentation before it.
    void before_value(const char* what);
    void after_value();
    void newline_and_indent();
    void close(Scope scope, char bracket);
    void write_string(std::string_view text);
    void write_raw(std::string_view text);

    std::ostream& out_;
    JsonStyle style_;
    std::vector<Frame> stack_;
    bool done_ = false;
};

} // namespace vkf
