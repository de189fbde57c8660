// The loop-control rewrite the llvmpipe 25 quirk applies (runtime/spirv_loop_control.hpp):
// on the real kernels' SPIR-V, every loop ends up DontUnroll and nothing else changes; words
// that are not a module are refused. That the rewritten kernels compute the same results is
// checked by the op suites under VKF_LIMITS no_unroll (test_attention, test_matmul).

#include "base/error.hpp"
#include "runtime/spirv_loop_control.hpp"
#include "shaders/variants.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace vkf {
namespace {

TEST(SpirvLoopControl, EveryKernelLoopBecomesDontUnrollAndNothingElseChanges) {
    std::uint32_t families_with_unroll = 0;
    for (const shaders::ShaderVariant& v : shaders::all_variants()) {
        SCOPED_TRACE(v.code->name);
        const std::span<const std::uint32_t> words = v.code->words;
        const LoopControlCounts before = count_loop_controls(words);
        const std::vector<std::uint32_t> rewritten = without_loop_unrolling(words);
        const LoopControlCounts after = count_loop_controls(rewritten);
        EXPECT_EQ(after.loops, before.loops);
        EXPECT_EQ(after.unroll, 0u);
        EXPECT_EQ(after.dont_unroll, before.loops);
        ASSERT_EQ(rewritten.size(), words.size());
        std::uint32_t changed = 0;
        for (std::size_t i = 0; i < words.size(); ++i) {
            changed += rewritten[i] != words[i] ? 1 : 0;
        }
        // Only loop-control words: at most one per loop (those already DontUnroll stay).
        EXPECT_LE(changed, before.loops);
        families_with_unroll += before.unroll > 0 ? 1 : 0;
    }
    // The rows attention kernel and the matmul kernels ask for unrolling: the rewrite has work.
    EXPECT_GT(families_with_unroll, 0u);
    EXPECT_GT(count_loop_controls(shaders::variant("attention_rows", {}).words).unroll, 0u);
}

TEST(SpirvLoopControl, LoopControlsWithParametersAreLeftAlone) {
    // A minimal instruction stream: header, then OpLoopMerge %merge %continue
    // Unroll|MaxIterations 16 (5 words), then OpLoopMerge with Unroll alone.
    const std::vector<std::uint32_t> words{0x07230203u,       0x00010300u, 0u,  100u,         0u,
                                           (5u << 16) | 246u, 10u,         11u, 0x1u | 0x20u, 16u,
                                           (4u << 16) | 246u, 12u,         13u, 0x1u};
    const std::vector<std::uint32_t> out = without_loop_unrolling(words);
    EXPECT_EQ(out[8], 0x1u | 0x20u);
    EXPECT_EQ(out[9], 16u);
    EXPECT_EQ(out[13], 0x2u);
    const LoopControlCounts c = count_loop_controls(out);
    EXPECT_EQ(c.loops, 2u);
    EXPECT_EQ(c.unroll, 1u);
    EXPECT_EQ(c.dont_unroll, 1u);
}

TEST(SpirvLoopControl, WordsThatAreNoModuleAreRefused) {
    EXPECT_THROW((void)without_loop_unrolling(std::vector<std::uint32_t>{1, 2, 3}), Error);
    EXPECT_THROW((void)without_loop_unrolling(
                     std::vector<std::uint32_t>{0x07230203u, 0x00010300u, 0u, 1u, 0u, (9u << 16) | 246u, 1u}),
                 Error);
    EXPECT_THROW((void)count_loop_controls(std::vector<std::uint32_t>{0x07230203u, 0u, 0u, 1u, 0u, 0u}), Error);
}

}  // namespace
}  // namespace vkf
