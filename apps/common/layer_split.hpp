#pragma once
// --split auto|N,N,... of a layer split over --devices, read the same by vkf-run and
// vkf-server (in the programs themselves: it needs host/model, which vkf_app does not link).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vkf::app {

// --split auto|N,N,...: the layers of every stage, empty for none or auto; a UsageError for
// a list that does not parse.
std::vector<std::uint32_t> layer_split_counts(const std::optional<std::string>& split);
// --split's stages against the --devices it splits over: a UsageError where they differ.
void check_split_stages(const std::optional<std::string>& split, std::size_t devices);

}  // namespace vkf::app
