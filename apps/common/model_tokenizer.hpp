#pragma once
// The tokenizer programs use with a model: --tokenizer FILE when given, else the model
// directory's tokenizer.json, as Hugging Face checkpoints ship it.

#include "host/text/tokenizer.hpp"

#include <string>

namespace vkf::app {

// `tokenizer_option` empty: MODEL_DIR/tokenizer.json, whose absence is an error saying how
// to give one; a GGUF file's tokenizer.ggml.* (host/spec/gguf_checkpoint.hpp). Errors in the file itself are the
// tokenizer's (vkf::Error naming the file).
text::Tokenizer load_model_tokenizer(const std::string& model_dir, const std::string& tokenizer_option);

}  // namespace vkf::app
