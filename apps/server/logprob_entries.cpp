#include "apps/server/logprob_entries.hpp"

#include <span>

namespace vkf::server {

// Tokens' logprobs as the response shows them, with each token's bytes; `offset` is where the
// next token starts in the choice's text (the bytes of the tokens before it).
std::vector<serve::LogprobEntry> logprob_entries(const ServedDecoder& d, const std::vector<TokenLogprobs>& given,
                                                 std::uint64_t& offset) {
    const auto bytes = [&d](std::uint32_t id) { return d.tokenizer->decode_bytes(std::span(&id, 1)); };
    std::vector<serve::LogprobEntry> out;
    for (const TokenLogprobs& lp : given) {
        serve::LogprobEntry e{.token = bytes(lp.chosen.id), .logprob = lp.chosen.logprob, .text_offset = offset};
        offset += e.token.size();
        for (const TokenLogprob& t : lp.top) {
            e.top.emplace_back(bytes(t.id), t.logprob);
        }
        out.push_back(std::move(e));
    }
    return out;
}

// echo with logprobs: the prompt's entries, its first token unscored (nothing comes before it).
std::vector<serve::LogprobEntry> prompt_entries(const ServedDecoder& d, std::uint32_t first_id,
                                                const std::vector<TokenLogprobs>& prompt_logprobs) {
    const std::uint32_t first[] = {first_id};
    std::vector<serve::LogprobEntry> entries = {
        {.token = d.tokenizer->decode_bytes(first), .text_offset = 0, .unscored = true}};
    std::uint64_t offset = entries[0].token.size();
    for (serve::LogprobEntry& e : logprob_entries(d, prompt_logprobs, offset)) {
        entries.push_back(std::move(e));
    }
    return entries;
}

// echo: the prompt's text before the choice's, and (with logprobs) its tokens' entries before
// the generated ones, whose offsets move past the prompt's text.
void echo_prompt(const ServedDecoder& d, const std::string& prompt_text, std::uint32_t first_id,
                 const std::vector<TokenLogprobs>& prompt_logprobs, serve::Choice& c) {
    c.text.insert(0, prompt_text);
    if (!c.logprobs) {
        return;
    }
    std::vector<serve::LogprobEntry> entries = prompt_entries(d, first_id, prompt_logprobs);
    for (serve::LogprobEntry& e : *c.logprobs) {
        e.text_offset += prompt_text.size();
        entries.push_back(std::move(e));
    }
    *c.logprobs = std::move(entries);
}

}  // namespace vkf::server
