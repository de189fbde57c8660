#pragma once
// The bytes each token id adds (its piece), as a trie: Matcher::allowed_tokens walks it so that
// the bytes tokens share at their start are matched once per step, and a byte the grammar
// refuses rules out every token under it at once (llama.cpp's grammar sampler shares prefixes
// the same way). Built once per vocabulary.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace vkf::grammar {

// Token pieces by id, as a trie of their bytes. An empty piece (a special token, a gap in the
// ids) is never allowed.
class PieceTrie {
public:
    explicit PieceTrie(std::vector<std::string> pieces);
    PieceTrie(const PieceTrie&) = delete;
    PieceTrie& operator=(const PieceTrie&) = delete;
    PieceTrie(PieceTrie&&) = default;
    PieceTrie& operator=(PieceTrie&&) = default;

    struct Node {
        std::uint32_t first_child = 0;  // children are nodes [first_child, first_child + children)
        std::uint32_t children = 0;
        std::uint32_t first_token = 0;  // tokens whose piece ends here: ends_[first_token, + tokens)
        std::uint32_t tokens = 0;
        std::uint8_t byte = 0;  // the byte that leads here from the parent
    };
    const std::vector<Node>& nodes() const { return nodes_; }  // nodes_[0]: the root
    std::span<const std::uint32_t> tokens_at(const Node& n) const {
        return std::span(ends_).subspan(n.first_token, n.tokens);
    }
    const std::string& piece(std::uint32_t id) const { return pieces_[id]; }
    std::size_t size() const { return pieces_.size(); }

private:
    std::vector<std::string> pieces_;
    std::vector<Node> nodes_;
    std::vector<std::uint32_t> ends_;
};

}  // namespace vkf::grammar
