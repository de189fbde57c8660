#pragma once
// vkf-run --prompt-cache FILE (llama.cpp's option): a saved sequence state
// (host/model/sequence_state.hpp) of the model. Before the run, the tokens it holds that begin
// the prompt (all but the prompt's last, whose logits the first token is sampled from) are
// restored instead of run; after it, the prompt's state is written over the file. A file that
// is not a state of this model and KV-cache format, truncated, corrupted or of a newer version
// ends the run with the reason (exit status 1), as llama.cpp does.

#include "host/io/json.hpp"
#include "host/model/batch.hpp"

#include <cstdint>
#include <span>
#include <string>

namespace vkf::run_cli {

struct PromptCache {
    std::string file;
    bool used = false;         // a prefix came from the file
    std::uint32_t tokens = 0;  // prompt tokens restored, not run
    std::uint32_t saved = 0;   // tokens written to the file after the run (0: none)
    std::uint32_t tokenizer_crc = 0;
};

// Restores into `sequence`, a sequence fed nothing yet, the longest run of the file's tokens
// that begins `prompt`, at most prompt.size() - 1. A missing file restores nothing. Throws
// vkf::Error for a file that is not a usable state.
PromptCache restore_prompt_cache(Batch& batch, SequenceId sequence, const std::string& file,
                                 const std::string& model_dir, std::span<const std::uint32_t> prompt);
// Writes the state of the sequence's first prompt_tokens tokens to the file, when it holds them.
void save_prompt_cache(Batch& batch, SequenceId sequence, std::uint32_t prompt_tokens, PromptCache& cache);

nlohmann::ordered_json prompt_cache_json(const PromptCache& cache);

}  // namespace vkf::run_cli
