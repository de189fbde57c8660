#pragma once
// The compiled shader variants. Each kernel family (one .comp) is compiled once per
// combination of defines that shaders/CMakeLists.txt declares for it, and the ops ask for
// a variant by family and defines:
//
//     shaders::variant("attention_rows", {{"SUBGROUP_LOADS", sg}, {"SPLIT_KV", split}, {"STORAGE_F16", f16}})
//
// A define listed with `false` documents that the variant must not have it, and is checked
// to exist in the family like the others, so that a misspelt define is an error whatever
// its value.

#include "runtime/spirv.hpp"

#include <initializer_list>
#include <span>
#include <string_view>

namespace vkf::shaders {

struct ShaderVariant {
    std::string_view family;                    // the .comp file's stem, e.g. "attention_rows"
    std::span<const std::string_view> defines;  // the -D defines, in the order of the family's axes
    const SpirvCode* code;                      // named "family[DEFINE,...]", or "family" without defines
};

// Every variant, grouped by family (the table cmake/VkfShaders.cmake generates).
std::span<const ShaderVariant> all_variants();

// One define of a variant request: the variant has it when `on`, lacks it when not.
struct Define {
    // Implicit so that a bare "NAME" in a request reads as that define on.
    Define(const char* define_name) : name(define_name) {}  // NOLINT(google-explicit-constructor)
    Define(std::string_view define_name, bool define_on) : name(define_name), on(define_on) {}
    std::string_view name;
    bool on = true;
};

// The variant of `family` compiled with exactly the defines that are on (in any order).
// Throws vkf::Error when the family does not exist, when a define is named twice or is none
// of the family's, or when no variant has that combination; the message lists what exists.
const SpirvCode& variant(std::string_view family, std::span<const Define> defines);
const SpirvCode& variant(std::string_view family, std::initializer_list<Define> defines);

}  // namespace vkf::shaders
