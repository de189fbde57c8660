#include "host/dist/test_fault.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace vkf::dist {

std::function<void(std::uint64_t)> test_fault(int rank) {
    const char* spec = std::getenv("VKF_TEST_RANK_FAULT");
    int fault_rank = -1;
    unsigned long long step = 0;
    char action[8] = {};
    if (spec == nullptr || std::sscanf(spec, "%d:%llu:%7s", &fault_rank, &step, action) != 3 || fault_rank != rank) {
        return {};
    }
    const int signal = std::string_view(action) == "kill" ? SIGKILL : SIGSTOP;
    return [step, signal](std::uint64_t now) {
        if (now == step) {
            std::raise(signal);
        }
    };
}

}  // namespace vkf::dist
