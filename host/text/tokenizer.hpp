#pragma once
// Hugging Face tokenizers (tokenizer.json, as BLOOM, MPT, Falcon, BERT and most current models
// ship them): text to token ids and back, with the same ids Hugging Face's own library gives.
// No Vulkan.
//
// A tokenizer.json is a pipeline: added (special) tokens are split out first, then the
// normalizer, the pre-tokenizer, the model (BPE or WordPiece), the post-processor (BOS/EOS, CLS/SEP)
// and, going back, the decoder. A component this file does not implement is refused by
// name when the file is loaded, never skipped: silently different ids are worse than none.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::text {

using TokenId = std::uint32_t;

class Tokenizer {
public:
    // Throws vkf::Error naming the file and the component or value that is wrong or unsupported
    // ("tokenizer.json: model.type: 'Unigram' is not supported (only BPE and WordPiece)").
    static Tokenizer load(const std::filesystem::path& file);
    // The same from a document in memory; `origin` names it in errors.
    static Tokenizer parse(std::string_view json, std::string_view origin);

    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;
    ~Tokenizer();

    // The ids of `text` (UTF-8; invalid UTF-8 is refused with a vkf::Error giving the byte
    // offset). `add_special_tokens` runs the post-processor (BOS/EOS), as Hugging Face's
    // encode(text, add_special_tokens=True) does.
    std::vector<TokenId> encode(std::string_view text, bool add_special_tokens = true) const;

    // The text of `ids` through the decoder. Bytes that do not form UTF-8 (a sequence cut
    // inside a character) come out as U+FFFD, as Hugging Face's decode does. Throws for an
    // id outside the vocabulary or in a gap of its ids.
    std::string decode(std::span<const TokenId> ids, bool skip_special_tokens = false) const;

    // The raw bytes `ids` decode to, without replacing incomplete UTF-8 (for streaming).
    std::string decode_bytes(std::span<const TokenId> ids, bool skip_special_tokens = false) const;

    // A token's string in the vocabulary ("Ġthe" in byte-level BPE, "##ing" in WordPiece); throws
    // when out of range, or for an id in a gap of the vocabulary's ids (no token has it).
    std::string_view token(TokenId id) const;
    // The id of a vocabulary or added token's string, if there is one.
    std::optional<TokenId> find(std::string_view token) const;
    // One past the highest id of the vocabulary and the added tokens.
    std::size_t vocab_size() const;
    // Whether `id` is an added token marked "special" (BOS, EOS, padding...).
    bool is_special(TokenId id) const;

private:
    struct Impl;
    explicit Tokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Decodes ids one at a time as a model generates them and hands out only complete UTF-8:
// a character whose bytes span two tokens is printed once both have arrived.
class TextStream {
public:
    explicit TextStream(const Tokenizer& tokenizer, bool skip_special_tokens = true);
    // The text that became complete with `id` (often empty or one word).
    std::string push(TokenId id);
    // What is left at the end: bytes of an incomplete character come out as U+FFFD.
    std::string finish();

private:
    const Tokenizer* tokenizer_;
    bool skip_special_;
    std::string pending_;  // decoded bytes not yet handed out (an incomplete character)
    std::vector<TokenId> ids_;
};

}  // namespace vkf::text
