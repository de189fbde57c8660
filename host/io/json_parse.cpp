// parse_json and read_json_file: nlohmann's SAX parser builds the JsonValue tree, and what
// nlohmann lets through that vkformer refuses is checked on the way.
#include "host/io/json.hpp"

#include "base/error.hpp"
#include "base/files.hpp"
#include "host/io/json_internal.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace vkf {
namespace {

// Integers up to 2^53 are exactly representable as doubles; beyond, an integral double
// may stand for many integer literals, so it is not reported as an exact integer.
constexpr double kMaxExactDouble = 9007199254740992.0;

// Where byte `offset` of `text` sits, for messages: "line L, column C" (both from 1,
// columns counting bytes).
std::string line_and_column(std::string_view text, std::size_t offset) {
    offset = std::min(offset, text.size());
    const std::size_t line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
    const std::size_t line_start = text.rfind('\n', offset == 0 ? std::string_view::npos : offset - 1);
    const std::size_t column = offset - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
    return "line " + fmt::to_string(line) + ", column " + fmt::to_string(column);
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

}  // namespace

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
            fail_here("nesting deeper than " + fmt::to_string(max_depth_) + " levels");
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

}  // namespace vkf
