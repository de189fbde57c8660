#pragma once
// Splitting reference work over threads without changing any result: each output is still
// computed by one thread, in one order, so results are bit-identical for any thread count.

#include <algorithm>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace vkf::reference {

// Runs fn(begin, end) over [0, count) split into at most `threads` contiguous ranges of at
// least `min_per_thread`, one std::thread each (the calling thread takes the first).
// Exceptions are rethrown here.
template <class Fn>
void parallel_ranges(std::size_t count, unsigned threads, std::size_t min_per_thread, const Fn& fn) {
    if (count == 0) {
        return;
    }
    const std::size_t parts =
        std::max<std::size_t>(1, std::min<std::size_t>(threads, count / std::max<std::size_t>(1, min_per_thread)));
    if (parts <= 1) {
        fn(std::size_t{0}, count);
        return;
    }
    std::exception_ptr failure;
    std::mutex failure_mutex;
    const auto guarded = [&](std::size_t begin, std::size_t end) {
        try {
            fn(begin, end);
        } catch (...) {
            const std::lock_guard lock(failure_mutex);
            if (!failure) {
                failure = std::current_exception();
            }
        }
    };
    std::vector<std::thread> workers;
    workers.reserve(parts - 1);
    const auto bound = [&](std::size_t part) { return count * part / parts; };
    for (std::size_t part = 1; part < parts; ++part) {
        workers.emplace_back(guarded, bound(part), bound(part + 1));
    }
    guarded(0, bound(1));
    for (std::thread& worker : workers) {
        worker.join();
    }
    if (failure) {
        std::rethrow_exception(failure);
    }
}

}  // namespace vkf::reference
