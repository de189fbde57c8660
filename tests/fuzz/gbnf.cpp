// Fuzzes the GBNF parser and the grammar matcher (host/grammar): the input is a grammar. When
// it parses, the matcher walks the input's own bytes as text, a piece at a time, and what the
// matcher promises is checked: a refused piece changes nothing, what it allows it accepts, and
// the token mask agrees with allows().

#include "host/grammar/grammar.hpp"
#include "host/grammar/matcher.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vkf;
    const std::string text(fuzz::as_text(data, size));
    fuzz::run_parser([&] {
        const grammar::Grammar g = grammar::parse_gbnf(text);
        fuzz::check(g.root < g.rules.size(), "the root is a rule");
        grammar::Matcher m(g);
        std::vector<std::string> pieces;
        for (std::size_t at = 0; at < text.size(); at += 3) {
            pieces.push_back(text.substr(at, 3));
        }
        const std::vector<std::uint8_t> mask = m.allowed_tokens(pieces);
        for (std::size_t i = 0; i < pieces.size(); ++i) {
            fuzz::check((mask[i] != 0) == m.allows(pieces[i]), "the mask is allows() of each piece");
        }
        for (const std::string& piece : pieces) {
            const bool allowed = m.allows(piece);
            const bool complete = m.complete();
            const bool accepted = m.accept(piece);
            fuzz::check(accepted == allowed, "accept() does what allows() said");
            if (!accepted) {
                fuzz::check(m.complete() == complete, "a refused piece changes nothing");
            }
        }
    });
    return 0;
}
