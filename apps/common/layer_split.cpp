#include "apps/common/layer_split.hpp"

#include "apps/common/app_main.hpp"
#include "base/error.hpp"
#include "host/model/layer_range.hpp"

#include <fmt/format.h>

namespace vkf::app {

std::vector<std::uint32_t> layer_split_counts(const std::optional<std::string>& split) {
    if (!split || *split == "auto") {
        return {};
    }
    try {
        return parse_layer_counts(*split);
    } catch (const Error&) {
        throw UsageError("--split '" + *split + "': give auto or the layers of every stage, e.g. 12,12");
    }
}

void check_split_stages(const std::optional<std::string>& split, std::size_t devices) {
    const std::vector<std::uint32_t> counts = layer_split_counts(split);
    if (!counts.empty() && counts.size() != devices) {
        throw UsageError("--split " + *split + " gives " + fmt::to_string(counts.size()) + " stages for " +
                         fmt::to_string(devices) + " devices");
    }
}

}  // namespace vkf::app
