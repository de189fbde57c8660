#include "runtime/spirv_reflect.hpp"

#include "runtime/error.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace vkf {

namespace {

enum Op : std::uint32_t {
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
};

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
        case OpDecorate:
            if (count >= 4) {
                if (ins[2] == ArrayStride) m.array_stride[ins[1]] = ins[3];
                if (ins[2] == Binding) m.binding[ins[1]] = ins[3];
                if (ins[2] == DescriptorSet) m.set[ins[1]] = ins[3];
            }
            break;
        case OpMemberDecorate:
            if (count >= 5 && ins[3] == Offset) m.member_offset[ins[1]][ins[2]] = ins[4];
            break;
        case OpTypeInt:
        case OpTypeFloat:
        case OpTypeVector:
        case OpTypeMatrix:
        case OpTypeArray:
        case OpTypeStruct: m.types[ins[1]] = std::vector<std::uint32_t>(ins.begin(), ins.end()); break;
        case OpTypePointer:
            if (count >= 4) pointers[ins[1]] = {ins[2], ins[3]};
            break;
        case OpConstant:
        case OpSpecConstant:
            if (count >= 4) m.constants[ins[2]] = ins[3];
            break;
        case OpVariable:
            if (count >= 4) variables.push_back({ins[1], ins[2], ins[3]});
            break;
        default: break;
        }
        i += count;
    }
    ShaderInterface out;
    for (const Variable& v : variables) {
        if (v.storage == PushConstant) {
            out.push_constant_size = type_size(m, pointers.at(v.pointer_type).second, shader);
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
