#include "runtime/spirv_reflect.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <spirv_cross/spirv_cross.hpp>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

namespace vkf {

namespace {

// GLSL's spelling of scalar and vector types; "" for the others (C++ mirrors use neither).
std::string type_name(const spirv_cross::SPIRType& type) {
    if (!type.array.empty() || type.columns != 1) {
        return "";
    }
    const char* scalar = nullptr;
    const char* vector_prefix = nullptr;
    switch (type.basetype) {
        case spirv_cross::SPIRType::UInt:
            scalar = "uint", vector_prefix = "u";
            break;
        case spirv_cross::SPIRType::Int:
            scalar = "int", vector_prefix = "i";
            break;
        case spirv_cross::SPIRType::Float:
            scalar = "float", vector_prefix = "";
            break;
        case spirv_cross::SPIRType::Double:
            scalar = "double", vector_prefix = "d";
            break;
        default:
            return "";
    }
    return type.vecsize == 1 ? std::string(scalar) : vector_prefix + std::string("vec") + fmt::to_string(type.vecsize);
}

bool is_subgroup_capability(spv::Capability c) {
    switch (c) {
        case spv::CapabilityGroupNonUniform:
        case spv::CapabilityGroupNonUniformVote:
        case spv::CapabilityGroupNonUniformArithmetic:
        case spv::CapabilityGroupNonUniformBallot:
        case spv::CapabilityGroupNonUniformShuffle:
        case spv::CapabilityGroupNonUniformShuffleRelative:
        case spv::CapabilityGroupNonUniformClustered:
        case spv::CapabilityGroupNonUniformQuad:
        case spv::CapabilityGroupNonUniformPartitionedNV:
        case spv::CapabilitySubgroupBallotKHR:
        case spv::CapabilitySubgroupVoteKHR:
            return true;
        default:
            return false;
    }
}

// Debian 12's SPIRV-Cross (2021.01.15) predates cooperative-matrix types and throws on
// OpTypeCooperativeMatrixNV. Reflection reads only the interface (push constants, storage
// buffers, capabilities), never those types, so a copy of the module in which each becomes a
// four-component vector of its component type is read instead; the matrix instructions in
// function bodies are kept as opaque operations. Other modules are read as they are.
std::vector<std::uint32_t> reflectable_words(std::span<const std::uint32_t> words) {
    constexpr std::uint32_t kHeaderWords = 5;
    constexpr std::uint32_t kTypeCooperativeMatrixNV = 5358;
    std::vector<std::uint32_t> out(words.begin(), words.begin() + std::min<std::size_t>(kHeaderWords, words.size()));
    for (std::size_t i = kHeaderWords; i < words.size();) {
        const std::uint32_t count = words[i] >> 16;
        if (count == 0 || i + count > words.size()) {
            return {words.begin(), words.end()};  // malformed: SPIRV-Cross says so
        }
        if ((words[i] & 0xFFFFu) == kTypeCooperativeMatrixNV && count == 6) {
            // OpTypeCooperativeMatrixNV %result %component %scope %rows %columns
            out.insert(out.end(), {(4u << 16) | spv::OpTypeVector, words[i + 1], words[i + 2], 4u});
        } else {
            out.insert(out.end(), words.begin() + i, words.begin() + i + count);
        }
        i += count;
    }
    return out;
}

}  // namespace

ShaderInterface reflect_shader(const SpirvCode& code) {
    const std::string shader(code.name);
    ShaderInterface out;
    try {
        const std::vector<std::uint32_t> words = reflectable_words(code.words);
        const spirv_cross::Compiler compiler(words.data(), words.size());
        const spirv_cross::ShaderResources resources = compiler.get_shader_resources();
        for (const spirv_cross::Resource& block : resources.push_constant_buffers) {
            const spirv_cross::SPIRType& type = compiler.get_type(block.base_type_id);
            out.push_constant_size = static_cast<std::uint32_t>(compiler.get_declared_struct_size(type));
            out.push_constant_block = compiler.get_name(type.self);
            for (std::uint32_t i = 0; i < type.member_types.size(); ++i) {
                out.push_constant_members.push_back(ReflectedMember{
                    .name = compiler.get_member_name(type.self, i),
                    .type = type_name(compiler.get_type(type.member_types[i])),
                    .offset = compiler.type_struct_member_offset(type, i),
                    .size = static_cast<std::uint32_t>(compiler.get_declared_struct_member_size(type, i))});
            }
        }
        const auto& capabilities = compiler.get_declared_capabilities();
        out.subgroup_operations = std::any_of(capabilities.begin(), capabilities.end(), is_subgroup_capability);
        for (const spv::Capability c : capabilities) {
            switch (static_cast<std::uint32_t>(c)) {
                case spv::CapabilityGroupNonUniformArithmetic:
                case spv::CapabilityGroupNonUniformShuffle:
                case spv::CapabilityGroupNonUniformShuffleRelative:
                    out.subgroup_arithmetic_or_shuffle = true;
                    break;
                case spv::CapabilityInt64:
                    out.int64 = true;
                    break;
                case spv::CapabilityFloat16:
                    out.float16 = true;
                    break;
                case spv::CapabilityStorageBuffer16BitAccess:
                case spv::CapabilityUniformAndStorageBuffer16BitAccess:
                case spv::CapabilityStoragePushConstant16:
                    out.storage_16bit = true;
                    break;
                case spv::CapabilityCooperativeMatrixNV:
                    out.cooperative_matrix = true;
                    break;
                case 6016:  // DotProductInputAll
                case 6017:  // DotProductInput4x8Bit
                case 6018:  // DotProductInput4x8BitPacked
                case 6019:  // DotProduct
                    out.integer_dot_product = true;
                    break;
                default:
                    break;
            }
        }
        if (!resources.uniform_buffers.empty()) {
            throw Error("shader " + shader + ": declares a uniform buffer ('" + resources.uniform_buffers[0].name +
                        "'); vkformer binds storage buffers only");
        }
        for (const spirv_cross::Resource& buffer : resources.storage_buffers) {
            const std::uint32_t set = compiler.get_decoration(buffer.id, spv::DecorationDescriptorSet);
            if (set != 0) {
                throw Error("shader " + shader + ": uses descriptor set " + fmt::to_string(set) +
                            "; vkformer shaders use set 0 only");
            }
            out.storage_bindings.push_back(compiler.get_decoration(buffer.id, spv::DecorationBinding));
        }
    } catch (const spirv_cross::CompilerError& e) {
        throw Error("shader " + shader + ": not a SPIR-V module vkformer can read: " + e.what());
    }
    // Several declarations may alias one binding (views of a buffer as different types).
    std::sort(out.storage_bindings.begin(), out.storage_bindings.end());
    out.storage_bindings.erase(std::unique(out.storage_bindings.begin(), out.storage_bindings.end()),
                               out.storage_bindings.end());
    return out;
}

}  // namespace vkf
