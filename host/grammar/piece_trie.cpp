#include "host/grammar/piece_trie.hpp"

#include <algorithm>
#include <tuple>

namespace vkf::grammar {

// Breadth first over the pieces in sorted order: a node's pieces are a range of them sharing its
// bytes, those that end at it first, then one run per next byte, each a child. Children are
// appended together, so they are contiguous.
PieceTrie::PieceTrie(std::vector<std::string> pieces) : pieces_(std::move(pieces)) {
    std::vector<std::uint32_t> order;
    for (std::uint32_t id = 0; id < pieces_.size(); ++id) {
        if (!pieces_[id].empty()) {
            order.push_back(id);
        }
    }
    std::sort(order.begin(), order.end(),
              [&](std::uint32_t a, std::uint32_t b) { return std::tie(pieces_[a], a) < std::tie(pieces_[b], b); });
    struct Range {
        std::size_t begin, end, depth;
    };
    std::vector<Range> ranges{{0, order.size(), 0}};
    nodes_.push_back({});
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
        auto [i, end, depth] = ranges[n];
        nodes_[n].first_token = static_cast<std::uint32_t>(ends_.size());
        for (; i < end && pieces_[order[i]].size() == depth; ++i) {
            ends_.push_back(order[i]);
        }
        nodes_[n].tokens = static_cast<std::uint32_t>(ends_.size()) - nodes_[n].first_token;
        nodes_[n].first_child = static_cast<std::uint32_t>(nodes_.size());
        while (i < end) {
            const char byte = pieces_[order[i]][depth];
            std::size_t j = i;
            while (j < end && pieces_[order[j]][depth] == byte) {
                ++j;
            }
            nodes_.push_back({.byte = static_cast<std::uint8_t>(byte)});
            ranges.push_back({i, j, depth + 1});
            i = j;
        }
        nodes_[n].children = static_cast<std::uint32_t>(nodes_.size()) - nodes_[n].first_child;
    }
}

}  // namespace vkf::grammar
