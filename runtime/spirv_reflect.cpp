#include "runtime/spirv_reflect.hpp"

#include "runtime/error.hpp"

#include <algorithm>
#include <span>
#include <string>
#include <unordered_map>

namespace vkf {

namespace {

enum Op : std::uint32_t {
    OpName = 5,
    OpMemberName = 6,
    OpDecorate = 71,
    OpMemberDecorate = 72,
    OpTypeInt = 21,
    OpTypeFloat = 22,
    OpTypeVector = 23,
    OpTypeMatrix = 24,
    OpTypeArray = 28,
    OpTypeStruct = 30,
    OpTypePointer = 32,
    OpConstant = 43,
    OpSpecConstant = 50,
    OpVariable = 59,
};
enum Decoration : std::uint32_t { ArrayStride = 6, Binding = 33, DescriptorSet = 34, Offset = 35 };
enum StorageClass : std::uint32_t { Uniform = 2, PushConstant = 9, StorageBuffer = 12 };

struct Module {
    std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> types; // id -> instruction words
    std::unordered_map<std::uint32_t, std::uint32_t> constants;         // id -> first value word
    std::unordered_map<std::uint32_t, std::uint32_t> array_stride;
    std::unordered_map<std::uint32_t, std::unordered_map<std::uint32_t, std::uint32_t>> member_offset;
    std::unordered_map<std::uint32_t, std::uint32_t> binding, set;
    std::unordered_map<std::uint32_t, std::string> names;
    std::unordered_map<std::uint32_t, std::unordered_map<std::uint32_t, std::string>> member_names;
};

// A literal string operand: UTF-8 bytes packed little-endian into words, NUL-terminated.
std::string literal_string(std::span<const std::uint32_t> words) {
    std::string s;
    for (std::uint32_t w : words) {
        for (int b = 0; b < 4; ++b) {
            const auto c = static_cast<char>((w >> (8 * b)) & 0xffu);
            if (c == '\0') {
                return s;
            }
            s += c;
        }
    }
    return s;  // unterminated: spirv-val refuses such modules; take what is there
}

std::string scalar_name(const std::vector<std::uint32_t>& w) {
    const std::uint32_t width = w.size() > 2 ? w[2] : 0;
    if ((w[0] & 0xffff) == OpTypeFloat) {
        return width == 32 ? "float" : width == 64 ? "double" : "float" + std::to_string(width) + "_t";
    }
    const bool is_signed = w.size() > 3 && w[3] != 0;
    if (width == 32) {
        return is_signed ? "int" : "uint";
    }
    return (is_signed ? "int" : "uint") + std::to_string(width) + "_t";
}

// GLSL's spelling of scalar and vector types; "" for the others (C++ mirrors use neither).
std::string type_name(const Module& m, std::uint32_t id) {
    const auto it = m.types.find(id);
    if (it == m.types.end()) {
        return "";
    }
    const auto& w = it->second;
    const std::uint32_t op = w[0] & 0xffff;
    if (op == OpTypeInt || op == OpTypeFloat) {
        return scalar_name(w);
    }
    if (op == OpTypeVector && w.size() > 3) {
        const std::string component = type_name(m, w[2]);
        const char* prefix = component == "float"    ? ""
                             : component == "double" ? "d"
                             : component == "uint"   ? "u"
                             : component == "int"    ? "i"
                                                     : nullptr;
        return prefix == nullptr ? "" : prefix + std::string("vec") + std::to_string(w[3]);
    }
    return "";
}

std::uint32_t type_size(const Module& m, std::uint32_t id, const std::string& shader, int depth = 0) {
    auto it = m.types.find(id);
    if (it == m.types.end() || depth > 16) {
        throw Error("shader " + shader + ": push-constant block uses a type vkformer cannot size");
    }
    const auto& w = it->second;
    switch (w[0] & 0xffff) {
    case OpTypeInt:
    case OpTypeFloat: return w[2] / 8;
    case OpTypeVector: return w[3] * type_size(m, w[2], shader, depth + 1);
    case OpTypeMatrix: return w[3] * type_size(m, w[2], shader, depth + 1);
    case OpTypeArray: {
        const auto len = m.constants.find(w[3]);
        const auto stride = m.array_stride.find(id);
        if (len == m.constants.end()) {
            throw Error("shader " + shader + ": push-constant array length is not a constant");
        }
        return len->second * (stride != m.array_stride.end() ? stride->second : type_size(m, w[2], shader, depth + 1));
    }
    case OpTypeStruct: {
        std::uint32_t size = 0;
        const auto offsets = m.member_offset.find(id);
        for (std::size_t i = 2; i < w.size(); ++i) {
            std::uint32_t offset = 0;
            if (offsets != m.member_offset.end()) {
                if (auto o = offsets->second.find(static_cast<std::uint32_t>(i - 2)); o != offsets->second.end()) {
                    offset = o->second;
                }
            }
            size = std::max(size, offset + type_size(m, w[i], shader, depth + 1));
        }
        return size;
    }
    default: throw Error("shader " + shader + ": push-constant block uses a type vkformer cannot size");
    }
}

void reflect_members(const Module& m, std::uint32_t block, const std::string& shader, ShaderInterface& out) {
    const auto& w = m.types.at(block);  // type_size has checked that it exists
    if ((w[0] & 0xffff) != OpTypeStruct) {
        throw Error("shader " + shader + ": the push-constant variable is not a block");
    }
    if (const auto name = m.names.find(block); name != m.names.end()) {
        out.push_constant_block = name->second;
    }
    const auto offsets = m.member_offset.find(block);
    const auto names = m.member_names.find(block);
    for (std::uint32_t i = 0; i + 2 < w.size(); ++i) {
        ReflectedMember member;
        member.type = type_name(m, w[i + 2]);
        member.size = type_size(m, w[i + 2], shader);
        if (offsets != m.member_offset.end()) {
            if (const auto o = offsets->second.find(i); o != offsets->second.end()) {
                member.offset = o->second;
            }
        }
        if (names != m.member_names.end()) {
            if (const auto n = names->second.find(i); n != names->second.end()) {
                member.name = n->second;
            }
        }
        out.push_constant_members.push_back(std::move(member));
    }
}

} // namespace

ShaderInterface reflect_shader(const SpirvCode& code) {
    const std::string shader(code.name);
    const auto words = code.words;
    if (words.size() < 5 || words[0] != 0x07230203u) {
        throw Error("shader " + shader + ": not a SPIR-V module (bad magic number)");
    }
    Module m;
    struct Variable {
        std::uint32_t pointer_type, id, storage;
    };
    std::vector<Variable> variables;
    std::unordered_map<std::uint32_t, std::pair<std::uint32_t, std::uint32_t>> pointers; // id -> (class, pointee)
    for (std::size_t i = 5; i < words.size();) {
        const std::uint32_t count = words[i] >> 16;
        const std::uint32_t op = words[i] & 0xffff;
        if (count == 0 || i + count > words.size()) {
            throw Error("shader " + shader + ": truncated SPIR-V instruction at word " + std::to_string(i));
        }
        const auto ins = words.subspan(i, count);
        switch (op) {
            case OpName:
                if (count >= 3)
                    m.names[ins[1]] = literal_string(ins.subspan(2));
                break;
            case OpMemberName:
                if (count >= 4)
                    m.member_names[ins[1]][ins[2]] = literal_string(ins.subspan(3));
                break;
            case OpDecorate:
                if (count >= 4) {
                    if (ins[2] == ArrayStride)
                        m.array_stride[ins[1]] = ins[3];
                    if (ins[2] == Binding)
                        m.binding[ins[1]] = ins[3];
                    if (ins[2] == DescriptorSet)
                        m.set[ins[1]] = ins[3];
                }
                break;
            case OpMemberDecorate:
                if (count >= 5 && ins[3] == Offset)
                    m.member_offset[ins[1]][ins[2]] = ins[4];
                break;
            case OpTypeInt:
            case OpTypeFloat:
            case OpTypeVector:
            case OpTypeMatrix:
            case OpTypeArray:
            case OpTypeStruct:
                m.types[ins[1]] = std::vector<std::uint32_t>(ins.begin(), ins.end());
                break;
            case OpTypePointer:
                if (count >= 4)
                    pointers[ins[1]] = {ins[2], ins[3]};
                break;
            case OpConstant:
            case OpSpecConstant:
                if (count >= 4)
                    m.constants[ins[2]] = ins[3];
                break;
            case OpVariable:
                if (count >= 4)
                    variables.push_back({ins[1], ins[2], ins[3]});
                break;
            default:
                break;
        }
        i += count;
    }
    ShaderInterface out;
    for (const Variable& v : variables) {
        if (v.storage == PushConstant) {
            const std::uint32_t block = pointers.at(v.pointer_type).second;
            out.push_constant_size = type_size(m, block, shader);
            reflect_members(m, block, shader, out);
        } else if (v.storage == StorageBuffer || v.storage == Uniform) {
            const auto set = m.set.find(v.id);
            if (set != m.set.end() && set->second != 0) {
                throw Error("shader " + shader + ": uses descriptor set " + std::to_string(set->second) +
                            "; vkformer shaders use set 0 only");
            }
            // Older SPIR-V spells storage buffers as Uniform + BufferBlock; vkformer shaders declare
            // no uniform blocks, so both are storage buffers here.
            const auto binding = m.binding.find(v.id);
            if (binding != m.binding.end()) out.storage_bindings.push_back(binding->second);
        }
    }
    // Several declarations may alias one binding (views of a buffer as different types).
    std::sort(out.storage_bindings.begin(), out.storage_bindings.end());
    out.storage_bindings.erase(std::unique(out.storage_bindings.begin(), out.storage_bindings.end()),
                               out.storage_bindings.end());
    return out;
}

} // namespace vkf
