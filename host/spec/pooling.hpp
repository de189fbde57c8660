#pragma once
// How an encoder's token states [tokens, hidden] become one embedding, as sentence-transformers
// and jina-embeddings-v2's encode() pool them; shared by the GPU op (host/ops/pooling.hpp)
// and the CPU reference (host/reference/pooling.hpp).

#include <cstdint>
#include <optional>
#include <string_view>

namespace vkf {

enum class Pooling : std::uint32_t {
    None = 0,  // every token's state, [tokens, hidden]
    Mean = 1,  // the mean over the tokens (jina-embeddings-v2, sentence-transformers' default)
    Cls = 2,   // the first token's state ([CLS])
};

// "none", "mean", "cls".
std::string_view pooling_name(Pooling pooling);
// The inverse of pooling_name; nullopt for any other text.
std::optional<Pooling> parse_pooling(std::string_view text);

// L2 normalization of a pooled embedding, as torch.nn.functional.normalize: x / max(|x|, eps).
inline constexpr double kNormalizeEps = 1e-12;

}  // namespace vkf
