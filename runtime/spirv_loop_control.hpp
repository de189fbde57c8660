#pragma once
// Loop-unrolling hints of a SPIR-V module, rewritten for drivers that should not follow them.
// The kernels ask for full unrolling ([[unroll]]) of their constant-count loops so that
// register tiles stay in registers on GPUs; llvmpipe compiles each pipeline with LLVM, and
// since Mesa 25 fully unrolled bodies take it 5-30x longer (seconds per pipeline), so the
// quirk table (runtime/quirks.cpp) turns the hints into "do not unroll" there.

#include <cstdint>
#include <span>
#include <vector>

namespace vkf {

// Every OpLoopMerge's loop control made DontUnroll (its Unroll bit cleared); loops whose
// control carries parameters (DependencyLength, PartialCount and the like; glslang writes
// none) are left as they are. Throws vkf::Error for words
// that are not a SPIR-V module (bad magic, an instruction running past the end).
std::vector<std::uint32_t> without_loop_unrolling(std::span<const std::uint32_t> words);

// Loops whose control asks for unrolling (Unroll bit), and loops marked DontUnroll.
struct LoopControlCounts {
    std::uint32_t unroll = 0;
    std::uint32_t dont_unroll = 0;
    std::uint32_t loops = 0;
};
LoopControlCounts count_loop_controls(std::span<const std::uint32_t> words);

}  // namespace vkf
