#include "host/text/token_pieces.hpp"

#include "base/error.hpp"

namespace vkf::text {

std::vector<std::string> token_pieces(const Tokenizer& tokenizer, std::size_t vocab) {
    std::vector<std::string> pieces(vocab);
    for (TokenId id = 0; id < vocab && id < tokenizer.vocab_size(); ++id) {
        if (tokenizer.is_special(id)) {
            continue;
        }
        try {
            pieces[id] = tokenizer.decode_bytes(std::span(&id, 1), true);
        } catch (const Error&) {  // a gap in the ids: no token to allow
        }
    }
    return pieces;
}

}  // namespace vkf::text
