#pragma once
// A tokenizer.json document taken apart into the pipeline's components, each checked as it is
// read: what the library does not implement is refused by name, what is malformed is refused with
// the file and key path (vkf::Error from JsonValue::fail).

#include "host/io/json.hpp"
#include "host/text/added_tokens.hpp"
#include "host/text/decoders.hpp"
#include "host/text/model.hpp"
#include "host/text/normalizers.hpp"
#include "host/text/post_processors.hpp"
#include "host/text/pre_tokenizers.hpp"
#include "host/text/vocab_index.hpp"

#include <memory>
#include <unordered_map>
#include <unordered_set>

namespace vkf::text {

struct TokenizerParts {
    std::unique_ptr<Normalizer> normalizer;         // null: none
    std::unique_ptr<PreTokenizer> pre_tokenizer;    // null: the text is one piece
    std::unique_ptr<Model> model;                   // BPE or WordPiece
    std::unique_ptr<PostProcessor> post_processor;  // null: none
    std::unique_ptr<Decoder> decoder;               // null: tokens joined with spaces
    AddedVocabulary added;
    std::unordered_map<TokenId, std::size_t> added_by_id;  // index into added.tokens()
    TokenIndex added_by_content;
    // The special tokens' contents: decode leaves out tokens whose string is one of them, as
    // Hugging Face does.
    std::unordered_set<std::string, StringHash, std::equal_to<>> special_contents;
    std::size_t vocab_size = 0;  // one past the highest id
};

TokenizerParts parse_tokenizer_json(const JsonValue& document);

}  // namespace vkf::text
