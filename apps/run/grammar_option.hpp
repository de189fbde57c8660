#pragma once
// vkf-run --grammar FILE (GBNF) and --json-schema FILE: the generated text of a --prompt run
// constrained as vkf-server's `grammar` and `json_schema` fields constrain it
// (GenerationOptions::grammar; docs/SERVER.md "Constrained output").

#include "apps/run/options.hpp"
#include "host/grammar/token_constraint.hpp"
#include "host/text/tokenizer.hpp"

#include <memory>

namespace vkf::run_cli {

// Null without either option. Throws vkf::Error naming the file for a grammar that does not
// parse or a schema outside the subset.
std::shared_ptr<const grammar::Constraint> run_grammar(const Options& o, const text::Tokenizer& tokenizer,
                                                       std::size_t vocab);

}  // namespace vkf::run_cli
