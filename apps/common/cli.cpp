#include "apps/common/cli.hpp"

#include "runtime/error.hpp"

#include <cmath>
#include <cstdlib>

namespace vkf::cli {

bool ArgReader::next() {
    if (index_ >= args_.size()) {
        return false;
    }
    arg_ = args_[index_++];
    name_ = arg_;
    inline_value_.reset();
    if (const std::size_t eq = arg_.find('='); arg_.starts_with("--") && eq != std::string_view::npos) {
        name_ = arg_.substr(0, eq);
        inline_value_ = std::string(arg_.substr(eq + 1));
    }
    return true;
}

std::string ArgReader::value() {
    if (inline_value_) {
        return *inline_value_;
    }
    if (index_ >= args_.size()) {
        throw UsageError{std::string(name_) + " needs a value"};
    }
    return args_[index_++];
}

void ArgReader::flag() const {
    if (inline_value_) {
        throw UsageError{std::string(name_) + " takes no value"};
    }
}

void ArgReader::unknown() const { throw UsageError{"unknown option '" + std::string(arg_) + "'"}; }

std::uint32_t parse_count(std::string_view option, std::string_view text, std::uint32_t min) {
    return parse_integer<std::uint32_t>(option, text, min);
}

namespace {

std::vector<std::string_view> split_commas(std::string_view text) {
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    while (true) {
        const std::size_t comma = text.find(',', start);
        parts.push_back(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (comma == std::string_view::npos) {
            return parts;
        }
        start = comma + 1;
    }
}

std::string alternatives(std::initializer_list<std::string_view> allowed) {
    std::string text;
    std::size_t i = 0;
    for (const std::string_view a : allowed) {
        text += i == 0 ? "" : (i + 1 == allowed.size() ? " or " : ", ");
        text += a;
        ++i;
    }
    return text;
}

} // namespace

std::vector<std::uint32_t> parse_counts(std::string_view option, std::string_view text, std::uint32_t min) {
    std::vector<std::uint32_t> values;
    for (const std::string_view part : split_commas(text)) {
        values.push_back(parse_count(option, part, min));
    }
    return values;
}

std::string parse_choice(std::string_view option, std::string_view text,
                         std::initializer_list<std::string_view> allowed) {
    for (const std::string_view a : allowed) {
        if (text == a) {
            return std::string(text);
        }
    }
    throw UsageError{std::string(option) + " is " + alternatives(allowed) + ", not '" + std::string(text) + "'"};
}

std::vector<std::string> parse_words(std::string_view option, std::string_view text,
                                     std::initializer_list<std::string_view> allowed) {
    std::vector<std::string> words;
    for (const std::string_view part : split_commas(text)) {
        words.push_back(parse_choice(option, part, allowed));
    }
    return words;
}

double parse_number(std::string_view option, std::string_view text) {
    const std::string copy(text);
    char* end = nullptr;
    const double value = std::strtod(copy.c_str(), &end);
    if (copy.empty() || end != copy.c_str() + copy.size() || !std::isfinite(value)) {
        throw UsageError{std::string(option) + " needs a finite number, not '" + copy + "'"};
    }
    return value;
}

double parse_positive(std::string_view option, std::string_view text) {
    double value = 0.0;
    try {
        value = parse_number(option, text);
    } catch (const UsageError&) {
        value = 0.0;
    }
    if (!(value > 0.0)) {
        throw UsageError{std::string(option) + " needs a positive number, not '" + std::string(text) + "'"};
    }
    return value;
}

LimitOverrides parse_limits(std::string_view option, std::string_view text, const LimitOverrides& so_far) {
    try {
        return so_far.merged_with(LimitOverrides::parse(text));
    } catch (const Error& e) {
        throw UsageError{std::string(option) + ": " + e.what()};
    }
}

std::string join_command_line(int argc, char** argv) {
    std::string line;
    for (int i = 0; i < argc; ++i) {
        const std::string_view arg = argv[i];
        line += i == 0 ? "" : " ";
        if (!arg.empty() && arg.find_first_of(" \t\"'\\$") == std::string_view::npos) {
            line += arg;
            continue;
        }
        line += '\'';
        for (const char c : arg) {
            line += c == '\'' ? std::string("'\\''") : std::string(1, c);
        }
        line += '\'';
    }
    return line;
}

} // namespace vkf::cli
