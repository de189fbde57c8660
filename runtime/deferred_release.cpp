#include "runtime/deferred_release.hpp"

namespace vkf {

void DeferredRelease::defer(std::function<void()> destroy) {
    const std::lock_guard lock(mutex_);
    deferred_.push_back(std::move(destroy));
}

void DeferredRelease::run_deferred() noexcept {
    std::vector<std::function<void()>> now;
    {
        const std::lock_guard lock(mutex_);
        now.swap(deferred_);
    }
    for (auto& destroy : now) {
        destroy();
    }
}

std::size_t DeferredRelease::deferred_count() const {
    const std::lock_guard lock(mutex_);
    return deferred_.size();
}

}  // namespace vkf
