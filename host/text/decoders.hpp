#pragma once
// Decoders: how token strings become text again (Hugging Face's decoders). A decoder turns the
// list of token strings into another list; the text is their concatenation. Here the strings are
// bytes: after ByteLevel they need not be UTF-8 until the whole text is (Tokenizer::decode then
// replaces what is not, as Hugging Face's String::from_utf8_lossy does).

#include <memory>
#include <string>
#include <vector>

namespace vkf::text {

class Decoder {
public:
    virtual ~Decoder() = default;
    virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

// ByteLevel: each token's characters back to the bytes they stand for (a token with a character
// outside the byte-level alphabet is taken as it is), all in one string.
std::unique_ptr<Decoder> make_byte_level_decoder();
// Replace: in each token, every occurrence of `pattern` (not empty) replaced by `content`.
std::unique_ptr<Decoder> make_replace_decoder(std::string pattern, std::string content);
// Strip: up to `start` leading and `stop` trailing copies of `content` (one character) removed
// from each token.
std::unique_ptr<Decoder> make_strip_decoder(std::string content, std::size_t start, std::size_t stop);
// Fuse: all tokens joined into one.
std::unique_ptr<Decoder> make_fuse_decoder();
// WordPiece: every token but the first loses the continuing-subword `prefix` if it starts with it
// and gets a space in front if it does not; with `cleanup`, each token then has the spaces of
// BERT's tokenization taken out (" ." -> ".", " n't" -> "n't", " do not" -> " don't"...). As in
// Hugging Face, cleanup works on one token at a time, not across tokens.
std::unique_ptr<Decoder> make_wordpiece_decoder(std::string prefix, bool cleanup);
// Sequence: each in order.
std::unique_ptr<Decoder> make_sequence_decoder(std::vector<std::unique_ptr<Decoder>> decoders);

}  // namespace vkf::text
