#include "host/io/json.hpp"

#include "host/util/files.hpp"
#include "runtime/error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>
#include <system_error>
#include <utility>
#include <vector>

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

// Where byte `offset` of `text` sits, for messages: "line L, column C" (both from 1,
// columns counting bytes).
std::string line_and_column(std::string_view text, std::size_t offset) {
    offset = std::min(offset, text.size());
    const std::size_t line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
    const std::size_t line_start = text.rfind('\n', offset == 0 ? std::string_view::npos : offset - 1);
    const std::size_t column = offset - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// nlohmann's problem text without its "[json.exception...] parse error at line L, column
// C: " prefix (the position is reported in vkformer's own form).
std::string problem_text(const nlohmann::detail::exception& ex) {
    std::string_view what = ex.what();
    if (const std::size_t bracket = what.find("] "); bracket != std::string_view::npos) {
        what.remove_prefix(bracket + 2);
    }
    if (what.starts_with("parse error")) {
        if (const std::size_t colon = what.find(": "); colon != std::string_view::npos) {
            what.remove_prefix(colon + 2);
        }
    }
    return std::string(what);
}

// Reading through this iterator counts the bytes nlohmann's lexer has consumed, so that
// events it reports without a position (a repeated key) can still be placed.
class CountingIterator {
public:
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;

    CountingIterator(const char* p, std::size_t* consumed) : p_(p), consumed_(consumed) {}
    reference operator*() const { return *p_; }
    CountingIterator& operator++() {
        ++p_;
        ++*consumed_;
        return *this;
    }
    CountingIterator operator++(int) {
        CountingIterator before = *this;
        ++*this;
        return before;
    }
    bool operator==(const CountingIterator& other) const { return p_ == other.p_; }

private:
    const char* p_;
    std::size_t* consumed_;
};

// The keys of one object being parsed, to refuse a repeated one: a hash table of indices into
// the object's own members (the key being read becomes the next member), so no key is copied.
// Small objects are searched directly. A tokenizer.json vocabulary is an object of 250k keys.
class MemberIndex {
public:
    // Whether `key` is new among `members`; records it as the member members.size() will hold.
    bool insert(const JsonValue::Object& members, std::string_view key) {
        if (members.size() < kDirectSearch) {
            return std::none_of(members.begin(), members.end(), [&](const JsonMember& m) { return m.key == key; });
        }
        if (2 * (members.size() + 1) > slots_.size()) {
            rebuild(members);
        }
        std::size_t slot = hash(key);
        for (; slots_[slot] != 0; slot = (slot + 1) & (slots_.size() - 1)) {
            if (members[slots_[slot] - 1].key == key) {
                return false;
            }
        }
        slots_[slot] = members.size() + 1;
        return true;
    }

private:
    static constexpr std::size_t kDirectSearch = 16;

    std::size_t hash(std::string_view key) const { return std::hash<std::string_view>{}(key) & (slots_.size() - 1); }

    // A quarter full afterwards, every member entered again (each key hashed once per doubling).
    void rebuild(const JsonValue::Object& members) {
        slots_.assign(std::bit_ceil(4 * (members.size() + 1)), 0);
        for (std::size_t i = 0; i < members.size(); ++i) {
            std::size_t slot = hash(members[i].key);
            while (slots_[slot] != 0) {
                slot = (slot + 1) & (slots_.size() - 1);
            }
            slots_[slot] = i + 1;
        }
    }

    std::vector<std::size_t> slots_;  // member index + 1; 0: empty
};

// Walks a document again to name the value at a given position in document order (the
// position JsonParser numbered it with): the path only an error message needs.
class PathFinder {
public:
    explicit PathFinder(std::uint64_t ordinal) : target_(ordinal) {}

    // nlohmann's SAX interface; returning false ends the walk once the value is reached.
    bool null() { return value(); }
    bool boolean(bool /*unused*/) { return value(); }
    bool number_integer(std::int64_t /*unused*/) { return value(); }
    bool number_unsigned(std::uint64_t /*unused*/) { return value(); }
    bool number_float(double /*unused*/, const std::string& /*unused*/) { return value(); }
    bool string(std::string& /*unused*/) { return value(); }
    bool binary(nlohmann::json::binary_t& /*unused*/) { return value(); }
    bool start_object(std::size_t /*unused*/) { return open(false); }
    bool start_array(std::size_t /*unused*/) { return open(true); }
    bool key(std::string& k) {
        stack_.back().key = std::move(k);
        return true;
    }
    bool end_object() { return close(); }
    bool end_array() { return close(); }
    bool parse_error(std::size_t /*unused*/, const std::string& /*unused*/,
                     const nlohmann::detail::exception& /*unused*/) {
        return false;
    }

    const std::string& path() const { return path_; }

private:
    struct Frame {
        bool array = false;
        std::uint64_t next_index = 0;
        std::string key;
        std::string path;  // the container's own path
    };

    std::string next_path() const {
        if (stack_.empty()) {
            return "";
        }
        const Frame& frame = stack_.back();
        return frame.array ? element_path(frame.path, frame.next_index) : child_path(frame.path, frame.key);
    }

    bool found() {
        path_ = next_path();
        return false;
    }

    bool value() {
        if (seen_++ == target_) {
            return found();
        }
        if (!stack_.empty()) {
            stack_.back().next_index += 1;
        }
        return true;
    }

    bool open(bool array) {
        if (seen_++ == target_) {
            return found();
        }
        stack_.push_back(Frame{.array = array, .path = next_path()});
        return true;
    }

    bool close() {
        stack_.pop_back();
        if (!stack_.empty()) {
            stack_.back().next_index += 1;
        }
        return true;
    }

    std::uint64_t target_;
    std::uint64_t seen_ = 0;
    std::vector<Frame> stack_;  // only the ancestors of the value being read: bounded by the depth limit
    std::string path_;
};

}  // namespace

// A parsed document's source name and text, shared by its values for their messages.
struct JsonDocument {
    std::string source;
    std::string text;
};

// Builds the JsonValue tree from nlohmann's SAX events (nlohmann parses: RFC 8259 syntax,
// escapes and surrogates, UTF-8 validation, number ranges). What nlohmann lets through
// and vkformer refuses is checked here: repeated keys, nesting beyond max_depth, a byte
// order mark and NUL bytes.
class JsonParser {
public:
    JsonParser(std::shared_ptr<const JsonDocument> document, std::size_t max_depth)
        : text_(document->text), document_(std::move(document)), max_depth_(max_depth) {}

    JsonValue parse_document() {
        if (text_.starts_with("\xef\xbb\xbf")) {
            fail_at(0, "a byte order mark is not allowed in JSON (RFC 8259, section 8.1)");
        }
        // nlohmann's lexer reads a NUL byte as the end of the input.
        if (const std::size_t nul = text_.find('\0'); nul != std::string_view::npos) {
            fail_at(nul, "byte 0x00 is not allowed in JSON");
        }
        const CountingIterator first(text_.data(), &consumed_);
        const CountingIterator last(text_.data() + text_.size(), &consumed_);
        nlohmann::json::sax_parse(first, last, this);
        return std::move(root_);
    }

    // --- nlohmann's SAX interface ---
    bool null() { return add(JsonValue()); }
    bool boolean(bool b) { return add(make(b)); }
    bool number_integer(std::int64_t v) {
        JsonValue::Number n{.value = static_cast<double>(v), .has_int64 = true, .int64 = v};
        if (v >= 0) {  // "-0"
            n.has_uint64 = true;
            n.uint64 = static_cast<std::uint64_t>(v);
        }
        return add(make(n));
    }
    bool number_unsigned(std::uint64_t v) {
        JsonValue::Number n{.value = static_cast<double>(v), .has_uint64 = true, .uint64 = v};
        if (v <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
            n.has_int64 = true;
            n.int64 = static_cast<std::int64_t>(v);
        }
        return add(make(n));
    }
    bool number_float(double v, const std::string& /*literal*/) {
        JsonValue::Number n{.value = v};
        if (std::trunc(v) == v && std::abs(v) <= kMaxExactDouble) {  // 2.0, 1e3
            n.has_int64 = true;
            n.int64 = static_cast<std::int64_t>(v);
            if (n.int64 >= 0) {
                n.has_uint64 = true;
                n.uint64 = static_cast<std::uint64_t>(n.int64);
            }
        }
        return add(make(n));
    }
    bool string(std::string& s) { return add(make(std::move(s))); }
    bool binary(nlohmann::json::binary_t& /*unused*/) { fail_here("binary values are not JSON"); }
    bool start_object(std::size_t /*unknown size*/) { return open(JsonValue::Object{}); }
    bool key(std::string& k) {
        Frame& frame = stack_.back();
        if (!frame.keys.insert(std::get<JsonValue::Object>(frame.value.data_), k)) {
            fail_at(key_start(), "duplicate key '" + k + "'");
        }
        frame.key = std::move(k);
        return true;
    }
    bool end_object() { return close(); }
    bool start_array(std::size_t /*unknown size*/) { return open(JsonValue::Array{}); }
    bool end_array() { return close(); }
    bool parse_error(std::size_t position, const std::string& /*last_token*/, const nlohmann::detail::exception& ex) {
        fail_at(position == 0 ? 0 : position - 1, problem_text(ex));
    }

private:
    struct Frame {
        JsonValue value;
        MemberIndex keys;  // objects: the members' keys, for the repeated-key check
        std::string key;   // objects: the member being read
    };

    template <class T>
    JsonValue make(T&& data) const {
        JsonValue v;
        v.data_ = std::forward<T>(data);
        return v;
    }

    bool add(JsonValue value) {
        value.document_ = document_;
        value.ordinal_ = next_ordinal_++;
        return attach(std::move(value));
    }

    // Puts a finished value into the open container, or makes it the document.
    bool attach(JsonValue value) {
        if (stack_.empty()) {
            root_ = std::move(value);
        } else if (Frame& frame = stack_.back(); frame.value.is_object()) {
            std::get<JsonValue::Object>(frame.value.data_).push_back({std::move(frame.key), std::move(value)});
        } else {
            std::get<JsonValue::Array>(frame.value.data_).push_back(std::move(value));
        }
        return true;
    }

    template <class Container>
    bool open(Container empty) {
        if (stack_.size() >= max_depth_) {
            fail_here("nesting deeper than " + std::to_string(max_depth_) + " levels");
        }
        JsonValue value = make(std::move(empty));
        value.document_ = document_;
        value.ordinal_ = next_ordinal_++;
        stack_.push_back(Frame{.value = std::move(value)});
        return true;
    }

    bool close() {
        JsonValue value = std::move(stack_.back().value);
        stack_.pop_back();
        // Growth leaves up to half of a large container's capacity unused.
        std::visit(
            [](auto& data) {
                if constexpr (std::is_same_v<std::decay_t<decltype(data)>, JsonValue::Array> ||
                              std::is_same_v<std::decay_t<decltype(data)>, JsonValue::Object>) {
                    data.shrink_to_fit();
                }
            },
            value.data_);
        return attach(std::move(value));
    }

    // The opening quote of the key the lexer has just read: consumed_ sits after its
    // closing quote, and a key holds no unescaped quote.
    std::size_t key_start() const {
        std::size_t i = consumed_ >= 2 ? consumed_ - 2 : 0;
        while (i > 0) {
            if (text_[i] == '"') {
                std::size_t backslashes = 0;
                while (backslashes < i && text_[i - 1 - backslashes] == '\\') {
                    ++backslashes;
                }
                if (backslashes % 2 == 0) {
                    return i;
                }
            }
            --i;
        }
        return 0;
    }

    [[noreturn]] void fail_here(const std::string& problem) const {
        fail_at(consumed_ == 0 ? 0 : consumed_ - 1, problem);
    }

    // Throws out of nlohmann's parser, which holds nothing that needs more than unwinding.
    [[noreturn]] void fail_at(std::size_t offset, const std::string& problem) const {
        throw Error(document_->source + ": " + line_and_column(text_, offset) + ": " + problem);
    }

    std::string_view text_;
    std::shared_ptr<const JsonDocument> document_;
    std::size_t max_depth_;
    std::uint64_t next_ordinal_ = 0;
    std::size_t consumed_ = 0;
    std::vector<Frame> stack_;
    JsonValue root_;
};

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
    return document_ ? std::string_view(document_->source) : std::string_view();
}

std::string JsonValue::path() const {
    if (!document_) {
        return "";
    }
    PathFinder finder(ordinal_);
    nlohmann::json::sax_parse(document_->text, &finder);
    return finder.path();
}

std::string JsonValue::location() const {
    const std::string where = path();
    if (source().empty()) {
        return where.empty() ? std::string("JSON value") : where;
    }
    return where.empty() ? std::string(source()) : std::string(source()) + ": " + where;
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

namespace {

JsonValue parse_document(std::string text, std::string_view source_name, std::size_t max_depth) {
    auto document = std::make_shared<JsonDocument>(JsonDocument{.source = std::string(source_name), .text = {}});
    document->text = std::move(text);
    return JsonParser(std::move(document), max_depth).parse_document();
}

}  // namespace

JsonValue parse_json(std::string_view text, std::string_view source_name, std::size_t max_depth) {
    return parse_document(std::string(text), source_name, max_depth);
}

JsonValue read_json_file(const std::filesystem::path& path, std::uint64_t max_bytes) {
    return parse_document(read_file(path, max_bytes, "JSON file"), path.string(), kJsonMaxDepth);
}

nlohmann::ordered_json to_nlohmann(const JsonValue& value) {
    switch (value.kind()) {
        case JsonKind::Null:
            return nullptr;
        case JsonKind::Bool:
            return value.as_bool();
        case JsonKind::Number: {
            const JsonValue::Number& n = std::get<JsonValue::Number>(value.data_);
            if (n.has_int64) {
                return n.int64;
            }
            if (n.has_uint64) {
                return n.uint64;
            }
            return n.value;
        }
        case JsonKind::String:
            return value.as_string();
        case JsonKind::Array: {
            nlohmann::ordered_json array = nlohmann::ordered_json::array();
            for (const JsonValue& element : value.as_array()) {
                array.push_back(to_nlohmann(element));
            }
            return array;
        }
        case JsonKind::Object: {
            nlohmann::ordered_json object = nlohmann::ordered_json::object();
            for (const JsonMember& member : value.as_object()) {
                object[member.key] = to_nlohmann(member.value);
            }
            return object;
        }
    }
    return nullptr;
}

std::string json_text(const nlohmann::ordered_json& document, JsonStyle style) {
    return document.dump(style == JsonStyle::Pretty ? 2 : -1, ' ', false,
                         nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace vkf
