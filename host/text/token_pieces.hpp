#pragma once
// The bytes each token adds to generated text (its piece), what a grammar masks tokens by
// (host/grammar/piece_trie.hpp): the decoder's output for the token alone, raw bytes (a piece
// may end inside a UTF-8 character). Exact for byte-level BPE (BLOOM, MPT, Falcon), whose
// tokens decode independently of their neighbours; a decoder that strips or adds a space at the
// start of the text (Metaspace) would make pieces that differ from the text in context.

#include "host/text/tokenizer.hpp"

#include <string>
#include <vector>

namespace vkf::text {

// One piece per id below `vocab` (the model's rows may be longer than the tokenizer's ids):
// empty for special tokens, ids past the tokenizer's and gaps in its ids, which a grammar
// never allows.
std::vector<std::string> token_pieces(const Tokenizer& tokenizer, std::size_t vocab);

}  // namespace vkf::text
