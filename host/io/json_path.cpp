// JsonValue::path(): a value's key path, worked out again from its document's text when a
// message needs it (values carry no copy of their path; see json.hpp).
#include "host/io/json.hpp"

#include "host/io/json_internal.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace vkf {
namespace {

std::string child_path(const std::string& parent, std::string_view key) {
    return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

std::string element_path(const std::string& parent, std::size_t index) {
    return parent + "[" + fmt::to_string(index) + "]";
}

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

std::string JsonValue::path() const {
    if (!document_) {
        return "";
    }
    PathFinder finder(ordinal_);
    nlohmann::json::sax_parse(document_->text, &finder);
    return finder.path();
}

}  // namespace vkf
