#pragma once
// VKF_TEST_RANK_FAULT=RANK:STEP:stop|kill (docs/ENVIRONMENT.md): the tests' way to make a rank of
// vkf-run or vkf-server under mpirun stop itself (SIGSTOP) or die (SIGKILL) in the middle of
// generation, at a step the test chooses.

#include <cstdint>
#include <functional>

namespace vkf::dist {

// What a serve loop calls before each step on this rank: raises the fault at its step; empty
// when the variable is unset, malformed or names another rank.
std::function<void(std::uint64_t)> test_fault(int rank);

}  // namespace vkf::dist
