// Fuzzes tokenizer.json (Tokenizer::parse, host/text/tokenizer.hpp) and the tokenizer it
// builds. The input is the document, optionally followed by a NUL byte and a text (a NUL
// cannot occur in a JSON document, so the split is unambiguous): an accepted tokenizer
// encodes a few fixed strings, that text, and text made of its own vocabulary's tokens, then
// decodes the ids it gave and a run of its first ids, in one go and streamed (TextStream),
// as vkf-tokenize and vkf-run do. Ids must lie in the vocabulary, and decoded text must be
// valid UTF-8 (the parts that are not come out as U+FFFD).

#include "host/text/tokenizer.hpp"
#include "host/text/utf8.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

using vkf::text::TokenId;
using vkf::text::Tokenizer;

void decode_all_ways(const Tokenizer& tokenizer, const std::vector<TokenId>& ids) {
    for (const bool skip : {false, true}) {
        const std::string text = tokenizer.decode(ids, skip);
        vkf::fuzz::check(vkf::text::find_invalid_utf8(text) == std::string_view::npos, "decode returns valid UTF-8");
        vkf::fuzz::sink(tokenizer.decode_bytes(ids, skip).size());
    }
    vkf::text::TextStream stream(tokenizer);
    std::string streamed;
    for (const TokenId id : ids) {
        streamed += stream.push(id);
    }
    streamed += stream.finish();
    vkf::fuzz::check(vkf::text::find_invalid_utf8(streamed) == std::string_view::npos,
                     "TextStream hands out valid UTF-8");
}

void encode_and_decode(const Tokenizer& tokenizer, std::string_view text) {
    vkf::fuzz::run_parser([&] {  // text that is not UTF-8 is refused with a vkf::Error
        for (const bool special : {true, false}) {
            const std::vector<TokenId> ids = tokenizer.encode(text, special);
            for (const TokenId id : ids) {
                vkf::fuzz::check(id < tokenizer.vocab_size(), "encode gives ids inside the vocabulary");
            }
            decode_all_ways(tokenizer, ids);
        }
    });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vkf;
    const std::string_view input = fuzz::as_text(data, size);
    const std::size_t nul = input.find('\0');
    const std::string_view json = input.substr(0, nul);
    const std::string_view text = nul == std::string_view::npos ? std::string_view{} : input.substr(nul + 1);
    fuzz::run_parser([&] {
        const Tokenizer tokenizer = Tokenizer::parse(json, "tokenizer.json");
        static const char* const kTexts[] = {
            "",
            "Hello, world! The quick brown fox jumps over the lazy dog.",
            "  leading and trailing spaces  \n\ttabs\r\n",
            "In the beginning God created the heaven and the earth. 1234567890 3.14",
            "na\xc3\xafve caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x99\x82 \xc3\x85ngstr\xc3\xb6m",
            "<s></s><unk><pad>[CLS][SEP]<|endoftext|>",
            "don't I'll we've THEY'RE",
        };
        for (const char* t : kTexts) {
            encode_and_decode(tokenizer, t);
        }
        encode_and_decode(tokenizer, text);
        // Text made of the vocabulary's own tokens, and a run of the first ids.
        const std::size_t n = std::min<std::size_t>(tokenizer.vocab_size(), 64);
        std::string tokens_text;
        std::vector<TokenId> first_ids;
        for (std::size_t i = 0; i < n; ++i) {
            const auto id = static_cast<TokenId>(i);
            first_ids.push_back(id);
            if (tokenizer.token(id).empty()) {
                continue;  // an id the vocabulary skips (ids with gaps load, as in Hugging Face)
            }
            tokens_text += tokenizer.token(id);
            const std::optional<TokenId> found = tokenizer.find(tokenizer.token(id));
            fuzz::check(found.has_value(), "a token's string finds an id");
            fuzz::sink(tokenizer.is_special(id));
        }
        encode_and_decode(tokenizer, tokens_text);
        decode_all_ways(tokenizer, first_ids);
        fuzz::run_parser([&] {
            const TokenId beyond = static_cast<TokenId>(tokenizer.vocab_size());
            tokenizer.decode(std::vector<TokenId>{beyond});  // refused: outside the vocabulary
            fuzz::check(false, "decode refuses an id outside the vocabulary");
        });
    });
    return 0;
}
