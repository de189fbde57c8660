#pragma once
// The FamilySpec of each decoder family, one file each (host/spec/families/<family>.cpp);
// family_spec.cpp collects them into families().

#include "host/io/json.hpp"
#include "host/spec/family_spec.hpp"

#include <nlohmann/json.hpp>

namespace vkf::family_defs {

const FamilySpec& bloom();
const FamilySpec& mpt();
const FamilySpec& falcon();
const FamilySpec& baichuan();
const FamilySpec& jais();
const FamilySpec& refact();

}  // namespace vkf::family_defs
