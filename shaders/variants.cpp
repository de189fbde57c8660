#include "shaders/variants.hpp"

#include "base/error.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace vkf::shaders {

namespace {

bool has(std::span<const std::string_view> defines, std::string_view d) {
    return std::find(defines.begin(), defines.end(), d) != defines.end();
}

std::string request_text(std::string_view family, std::span<const Define> defines) {
    std::string s(family);
    std::string on;
    for (const Define& d : defines) {
        if (d.on) {
            on += (on.empty() ? "" : ",") + std::string(d.name);
        }
    }
    return on.empty() ? s : s + "[" + on + "]";
}

std::string names_of(std::span<const ShaderVariant> variants) {
    std::string s;
    for (const ShaderVariant& v : variants) {
        s += (s.empty() ? "" : ", ") + std::string(v.code->name);
    }
    return s;
}

}  // namespace

const SpirvCode& variant(std::string_view family, std::span<const Define> defines) {
    const auto all = all_variants();
    const auto first = std::find_if(all.begin(), all.end(), [&](const ShaderVariant& v) { return v.family == family; });
    const auto last = std::find_if(first, all.end(), [&](const ShaderVariant& v) { return v.family != family; });
    const std::span<const ShaderVariant> own(first, last);
    if (own.empty()) {
        std::vector<std::string_view> families;
        for (const ShaderVariant& v : all) {
            if (families.empty() || families.back() != v.family) {
                families.push_back(v.family);
            }
        }
        std::string list;
        for (std::string_view f : families) {
            list += (list.empty() ? "" : ", ") + std::string(f);
        }
        throw Error("no shader family '" + std::string(family) + "'; the families are " + list);
    }
    std::size_t on = 0;
    for (std::size_t i = 0; i < defines.size(); ++i) {
        const std::string_view name = defines[i].name;
        for (std::size_t j = 0; j < i; ++j) {
            if (defines[j].name == name) {
                throw Error("shader variant " + request_text(family, defines) + ": define " + std::string(name) +
                            " is named twice");
            }
        }
        if (std::none_of(own.begin(), own.end(), [&](const ShaderVariant& v) { return has(v.defines, name); })) {
            throw Error("shader variant " + request_text(family, defines) + ": no variant of " + std::string(family) +
                        " has define " + std::string(name) + "; the variants are " + names_of(own));
        }
        on += defines[i].on ? 1 : 0;
    }
    for (const ShaderVariant& v : own) {
        const bool match = v.defines.size() == on && std::all_of(defines.begin(), defines.end(), [&](const Define& d) {
                               return has(v.defines, d.name) == d.on;
                           });
        if (match) {
            return *v.code;
        }
    }
    throw Error("no shader variant " + request_text(family, defines) + "; the variants of " + std::string(family) +
                " are " + names_of(own));
}

const SpirvCode& variant(std::string_view family, std::initializer_list<Define> defines) {
    return variant(family, std::span<const Define>(defines.begin(), defines.size()));
}

}  // namespace vkf::shaders
