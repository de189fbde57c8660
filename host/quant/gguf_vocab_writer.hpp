#pragma once
// A Hugging Face tokenizer as the tokenizer.* metadata llama.cpp's converter writes for a
// byte-level BPE vocabulary (conversion/base.py's _set_vocab_gpt2 and gguf-py's SpecialVocab):
//   tokenizer.ggml.model "gpt2", tokenizer.ggml.pre ("gpt-2" for GPT-2's ByteLevel regex,
//   "bloom" for BLOOM's Split + ByteLevel), tokenizer.ggml.tokens by id with "[PADn]" fillers
//   up to config.json's vocab_size, tokenizer.ggml.token_type (NORMAL; CONTROL for special added
//   tokens and those that look special; USER_DEFINED for the other added tokens; UNUSED for the
//   fillers), tokenizer.ggml.merges ("a b"), the bos/eos/unk/sep/pad/mask ids
//   (tokenizer_config.json's tokens first, then config.json's *_token_id),
//   add_bos/add_eos/add_sep (tokenizer_config.json's add_*_token, or a TemplateProcessing
//   post-processor that starts with BOS or ends with EOS), normalizer lowercase/strip_accents,
//   and tokenizer.chat_template (tokenizer_config.json's, chat_template.jinja or
//   chat_template.json; named templates as tokenizer.chat_template.NAME).
// llama.cpp picks tokenizer.ggml.pre by hashing what the tokenizer makes of a test text; vkformer
// reads the pre-tokenizer's definition instead and refuses one it does not know, by name.

#include "host/io/gguf.hpp"

#include <cstdint>
#include <filesystem>
#include <vector>

namespace vkf {

// The keys for the tokenizer files in model_dir (config.json, tokenizer.json and, when
// present, tokenizer_config.json, chat_template.jinja / .json). Empty when model_dir has no
// tokenizer.json. Throws vkf::Error naming the file for a tokenizer that is not byte-level BPE,
// an unknown pre-tokenizer, or a token id at or beyond vocab_size.
std::vector<GgufKeyValue> gguf_tokenizer_metadata(const std::filesystem::path& model_dir, std::uint32_t vocab_size);

}  // namespace vkf
