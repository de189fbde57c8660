#include "runtime/push_constants.hpp"

#include "base/error.hpp"
#include "runtime/spirv_reflect.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vkf {

namespace {

std::string describe(std::string_view name, std::string_view type, std::uint32_t offset, std::uint32_t size) {
    std::string s = "'" + std::string(name.empty() ? "?" : name) + "' (";
    if (!type.empty()) {
        s += std::string(type) + " ";
    }
    return s + "at offset " + fmt::to_string(offset) + ", " + fmt::to_string(size) + " bytes)";
}

std::string describe(const ReflectedMember& m) {
    return describe(m.name, m.type, m.offset, m.size);
}
std::string describe(const PushConstantMember& m) {
    return describe(m.name, m.type, m.offset, m.size);
}

bool same(const ReflectedMember& shader, const PushConstantMember& cpp) {
    return shader.offset == cpp.offset && shader.size == cpp.size && (shader.name.empty() || shader.name == cpp.name) &&
           (shader.type.empty() || shader.type == cpp.type);
}

}  // namespace

void check_push_constants(const ShaderInterface& shader, const PushConstantLayout& layout, const std::string& who) {
    const std::string cpp = layout.cpp_struct.empty() ? std::string("the C++ side") : std::string(layout.cpp_struct);
    // Members first: a field missing on one side also changes the size, and the member tells
    // which field it is.
    const auto& members = shader.push_constant_members;
    const std::size_t common = std::min(members.size(), layout.members.size());
    for (std::size_t i = 0; i < common; ++i) {
        if (!same(members[i], layout.members[i])) {
            throw Error(who + "push-constant member " + fmt::to_string(i) + " is " + describe(members[i]) +
                        " in the shader but " + describe(layout.members[i]) + " in " + cpp);
        }
    }
    if (members.size() > common) {
        throw Error(who + "the shader's push-constant block has " + fmt::to_string(members.size()) + " members but " +
                    cpp + " declares " + fmt::to_string(layout.members.size()) + "; missing from " + cpp + ": " +
                    describe(members[common]));
    }
    if (layout.members.size() > common && !members.empty()) {
        throw Error(who + "the shader's push-constant block has " + fmt::to_string(members.size()) + " members but " +
                    cpp + " declares " + fmt::to_string(layout.members.size()) +
                    "; not in the shader: " + describe(layout.members[common]));
    }
    if (shader.push_constant_size != layout.size) {
        throw Error(who + "the shader's push-constant block is " + fmt::to_string(shader.push_constant_size) +
                    " bytes but the C++ side declares " + fmt::to_string(layout.size) + " bytes");
    }
    if (!shader.push_constant_block.empty() && !layout.block.empty() && shader.push_constant_block != layout.block) {
        throw Error(who + "the shader's push-constant block is " + shader.push_constant_block + " but " + cpp +
                    " mirrors " + std::string(layout.block));
    }
}

}  // namespace vkf
