#include "runtime/spirv_loop_control.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <string>

namespace vkf {

namespace {

constexpr std::uint32_t kMagic = 0x07230203u;
constexpr std::uint32_t kHeaderWords = 5;
constexpr std::uint32_t kOpLoopMerge = 246;
// SPIR-V's LoopControl mask bits.
constexpr std::uint32_t kUnroll = 0x1;
constexpr std::uint32_t kDontUnroll = 0x2;
// Bits that carry operand words (DependencyLength .. PartialCount): clearing one would leave
// its operand behind, and OpLoopMerge must stay where it is (right before the branch).
constexpr std::uint32_t kWithOperands = 0x8 | 0x10 | 0x20 | 0x40 | 0x80 | 0x100;

// Calls f(index of the instruction's first word) for every OpLoopMerge.
template <class F>
void for_each_loop_merge(std::span<const std::uint32_t> words, F&& f) {
    if (words.size() < kHeaderWords || words[0] != kMagic) {
        throw Error("not a SPIR-V module (no magic number)");
    }
    std::size_t i = kHeaderWords;
    while (i < words.size()) {
        const std::uint32_t count = words[i] >> 16;
        const std::uint32_t opcode = words[i] & 0xffffu;
        if (count == 0 || i + count > words.size()) {
            throw Error("SPIR-V instruction at word " + fmt::to_string(i) + " runs past the end of the module");
        }
        if (opcode == kOpLoopMerge && count >= 4) {
            f(i);
        }
        i += count;
    }
}

}  // namespace

std::vector<std::uint32_t> without_loop_unrolling(std::span<const std::uint32_t> words) {
    std::vector<std::uint32_t> out(words.begin(), words.end());
    for_each_loop_merge(words, [&](std::size_t i) {
        std::uint32_t& control = out[i + 3];
        if ((control & kWithOperands) == 0) {
            control = (control & ~kUnroll) | kDontUnroll;
        }
    });
    return out;
}

LoopControlCounts count_loop_controls(std::span<const std::uint32_t> words) {
    LoopControlCounts c;
    for_each_loop_merge(words, [&](std::size_t i) {
        c.loops += 1;
        c.unroll += (words[i + 3] & kUnroll) != 0 ? 1 : 0;
        c.dont_unroll += (words[i + 3] & kDontUnroll) != 0 ? 1 : 0;
    });
    return c;
}

}  // namespace vkf
