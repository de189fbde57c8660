#pragma once
// vkf-run --interactive: each line of stdin is a turn of one conversation in one Session.

#include "apps/run/options.hpp"
#include "host/model/session.hpp"
#include "host/text/tokenizer.hpp"

#include <cstdint>
#include <vector>

namespace vkf::run_cli {

// Answers every line of stdin until its end or a full KV cache; returns the exit status.
int chat(Session& session, const text::Tokenizer& tokenizer, const Options& o,
         const std::vector<std::uint32_t>& stop_ids);

}  // namespace vkf::run_cli
