#include "apps/run/grammar_option.hpp"

#include "base/error.hpp"
#include "host/grammar/json_schema.hpp"
#include "host/io/json.hpp"
#include "host/io/text_file.hpp"
#include "host/text/token_pieces.hpp"

#include <fmt/format.h>

namespace vkf::run_cli {

std::shared_ptr<const grammar::Constraint> run_grammar(const Options& o, const text::Tokenizer& tokenizer,
                                                       std::size_t vocab) {
    if (o.grammar_file.empty() && o.json_schema_file.empty()) {
        return nullptr;
    }
    const bool schema = !o.json_schema_file.empty();
    const std::string& file = schema ? o.json_schema_file : o.grammar_file;
    std::string gbnf;
    try {
        gbnf = schema ? grammar::json_schema_to_gbnf(read_json_file(file)) : read_text_file(file);
        return std::make_shared<const grammar::Constraint>(grammar::Constraint{
            .grammar = grammar::parse_gbnf(gbnf),
            .pieces = std::make_shared<const grammar::PieceTrie>(text::token_pieces(tokenizer, vocab))});
    } catch (const Error& e) {
        throw Error(fmt::format("{} {}: {}", schema ? "--json-schema" : "--grammar", file, e.what()));
    }
}

}  // namespace vkf::run_cli
