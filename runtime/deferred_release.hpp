#pragma once
// Destruction of device objects the GPU may still be using.
//
// vkformer waits for every submission it makes, so normally nothing is in flight when an
// owner (Buffer, CommandList, DescriptorAllocator) lets its handles go, and they are
// destroyed at once. A submission that timed out is still running, though (Vulkan cannot
// cancel it), and it may use any buffer, pool or memory block its owners are about to free
// while an exception unwinds them: freeing those crashes the driver. So once a wait has
// timed out or reported VK_ERROR_DEVICE_LOST, the device starts deferring: owners hand their
// destruction here, and it runs after vkDeviceWaitIdle when the Context (or the allocator,
// or the Device) goes. A lost device answers that wait with VK_ERROR_DEVICE_LOST at once; a
// hung one returns when the driver's watchdog resets it.
//
// Thread-safe: owners in any thread may release at the same time.

#include <atomic>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace vkf {

class DeferredRelease {
public:
    // From now on release() defers: work may be in flight that nobody waits for.
    void start_deferring() noexcept { deferring_.store(true); }
    bool deferring() const noexcept { return deferring_.load(); }

    // Runs `destroy` (noexcept) now, or keeps it for run_deferred() while deferring. Should
    // keeping it fail for lack of host memory, the objects leak: better than freeing what the
    // GPU may still read. Nothing is allocated unless deferring.
    template <class F>
    void release(F&& destroy) noexcept {
        if (deferring()) {
            try {
                defer(std::function<void()>(std::forward<F>(destroy)));
            } catch (...) {
                // Out of host memory: the objects leak.
            }
        } else {
            destroy();
        }
    }

    // Runs what was deferred, in the order it came. Only once the device is idle or lost.
    void run_deferred() noexcept;

    std::size_t deferred_count() const;

private:
    void defer(std::function<void()> destroy);

    std::atomic<bool> deferring_{false};
    mutable std::mutex mutex_;
    std::vector<std::function<void()>> deferred_;
};

}  // namespace vkf
