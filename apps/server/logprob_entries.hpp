#pragma once
// Tokens' log-probabilities as a generation response shows them (serve::LogprobEntry), and
// echo's prompt before a choice: shared by the whole and the streamed answers.

#include "apps/server/routes.hpp"
#include "host/sample/logprobs.hpp"
#include "host/serve/responses.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace vkf::server {

// Tokens' logprobs with each token's bytes; `offset` is where the next token starts in the
// choice's text (the bytes of the tokens before it).
std::vector<serve::LogprobEntry> logprob_entries(const ServedDecoder& d, const std::vector<TokenLogprobs>& given,
                                                 std::uint64_t& offset);
// echo with logprobs: the prompt's entries, its first token unscored (nothing comes before it).
std::vector<serve::LogprobEntry> prompt_entries(const ServedDecoder& d, std::uint32_t first_id,
                                                const std::vector<TokenLogprobs>& prompt_logprobs);
// echo: the prompt's text before the choice's, and (with logprobs) its tokens' entries before
// the generated ones, whose offsets move past the prompt's text.
void echo_prompt(const ServedDecoder& d, const std::string& prompt_text, std::uint32_t first_id,
                 const std::vector<TokenLogprobs>& prompt_logprobs, serve::Choice& c);

}  // namespace vkf::server
