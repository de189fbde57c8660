// The per-token cost of a grammar's mask (issue 43), not a test: TokenConstraint::mask over a
// real vocabulary (a tokenizer.json's pieces) and a synthetic one of 250K pieces (the real ones
// plus random byte-level words, letters mostly, some with a leading space, digits, punctuation
// and multi-byte UTF-8), at every step of a JSON document fed as the longest allowed piece that
// starts the rest of it. Prints mean, median and worst milliseconds per mask (wall and CPU),
// with TokenConstraint's cache of recent states' masks, and (for the smaller vocabulary) piece
// by piece without it.
//
// usage: grammar_mask_bench TOKENIZER_JSON [SYNTHETIC_SIZE]   (default 250000)

#include "base/error.hpp"
#include "host/grammar/json_schema.hpp"
#include "host/grammar/token_constraint.hpp"
#include "host/io/json.hpp"
#include "host/text/token_pieces.hpp"
#include "host/util/splitmix64.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace vkf {
namespace {

constexpr const char* kSchema = R"({"type":"object","properties":{
  "name":{"type":"string"},"age":{"type":"integer"},"email":{"type":"string","maxLength":40},
  "tags":{"type":"array","items":{"type":"string"},"maxItems":4},
  "address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"},
             "zip":{"type":"string"}},"required":["street","city"]},
  "active":{"type":"boolean"},"score":{"type":"number"}},"required":["name","age","tags","address"]})";
constexpr const char* kDocument =
    R"({"name": "Abraham of Ur, the son of Terah", "age": 175, "tags": ["patriarch", "shepherd", )"
    R"("caf\u00e9 \u65e5\u672c"], "address": {"street": "The plain of Mamre, by the oaks", "city": "Hebron"}, )"
    R"("email": "abraham@example.org", "active": true, "score": -12.5e2})";

std::vector<std::string> synthetic(std::vector<std::string> pieces, std::size_t size) {
    std::uint64_t state = 43;
    const auto next = [&](std::uint64_t n) { return splitmix64_next(state) % n; };
    const std::string letters = "etaoinshrdlucmfwypvbgkjqxzETAOINSHRDLU";
    const std::vector<std::string> others{"0",
                                          "1",
                                          "2",
                                          "9",
                                          ".",
                                          ",",
                                          "\"",
                                          ":",
                                          "{",
                                          "}",
                                          "[",
                                          "]",
                                          "-",
                                          "'",
                                          "\xC3\xA9",
                                          "\xE6\x97\xA5",
                                          "\xF0\x9F\x98\x80",
                                          "\xD0\xB6",
                                          "\n",
                                          "_"};
    while (pieces.size() < size) {
        std::string p = next(3) == 0 ? " " : "";
        const std::uint64_t length = 1 + next(9);
        for (std::uint64_t i = 0; i < length; ++i) {
            p += next(8) == 0 ? others[next(others.size())] : std::string(1, letters[next(letters.size())]);
        }
        pieces.push_back(std::move(p));
    }
    return pieces;
}

struct Figures {
    std::vector<double> trie_ms, trie_cpu_ms, naive_ms;  // wall (and CPU) milliseconds per mask
};

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

void report(std::string_view what, std::size_t vocab, const std::vector<double>& ms) {
    if (ms.empty()) {
        return;
    }
    double sum = 0;
    for (const double x : ms) {
        sum += x;
    }
    fmt::print("{:>7} pieces, {:<15} {:4} masks: mean {:8.3f} ms, median {:8.3f} ms, p90 {:8.3f} ms, max {:8.3f} ms\n",
               vocab, what, ms.size(), sum / static_cast<double>(ms.size()), percentile(ms, 0.5), percentile(ms, 0.9),
               percentile(ms, 1.0));
}

Figures walk(const std::vector<std::string>& pieces, bool naive) {
    using clock = std::chrono::steady_clock;
    auto trie = std::make_shared<const grammar::PieceTrie>(pieces);
    auto c = std::make_shared<const grammar::Constraint>(grammar::Constraint{
        .grammar = grammar::parse_gbnf(grammar::json_schema_to_gbnf(parse_json(kSchema, "schema"))), .pieces = trie});
    grammar::TokenConstraint t(c);
    grammar::Matcher reference(c->grammar);
    Figures f;
    std::string_view rest = kDocument;
    while (!rest.empty()) {
        const auto start = clock::now();
        const std::clock_t cpu_start = std::clock();
        const std::vector<std::uint8_t> mask = t.mask(pieces.size(), {});
        f.trie_ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - start).count());
        f.trie_cpu_ms.push_back(1000.0 * static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC);
        if (naive) {
            const auto naive_start = clock::now();
            const std::vector<std::uint8_t> by_piece = reference.allowed_tokens(pieces);
            f.naive_ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - naive_start).count());
            if (by_piece != mask) {
                throw Error("the trie's mask differs from the piece-by-piece one");
            }
        }
        std::size_t best = pieces.size();
        for (std::size_t id = 0; id < pieces.size(); ++id) {
            if (mask[id] != 0 && rest.starts_with(pieces[id]) &&
                (best == pieces.size() || pieces[id].size() > pieces[best].size())) {
                best = id;
            }
        }
        if (best == pieces.size()) {
            throw Error(fmt::format("no allowed piece starts '{}'", rest.substr(0, 20)));
        }
        t.accept(static_cast<std::uint32_t>(best));
        if (naive && !reference.accept(pieces[best])) {
            throw Error("the reference matcher refused an allowed piece");
        }
        rest.remove_prefix(pieces[best].size());
    }
    return f;
}

int run(const char* tokenizer_path, std::size_t size) {
    const text::Tokenizer tokenizer = text::Tokenizer::load(tokenizer_path);
    const std::vector<std::string> real = text::token_pieces(tokenizer, tokenizer.vocab_size());
    const Figures small = walk(real, true);
    report("trie", real.size(), small.trie_ms);
    report("trie, CPU time", real.size(), small.trie_cpu_ms);
    report("piece by piece", real.size(), small.naive_ms);
    const std::vector<std::string> big = synthetic(real, size);
    const Figures large = walk(big, false);
    report("trie", big.size(), large.trie_ms);
    report("trie, CPU time", big.size(), large.trie_cpu_ms);
    return 0;
}

}  // namespace
}  // namespace vkf

int main(int argc, char** argv) {
    if (argc < 2 || argc > 3) {
        std::cerr << "usage: grammar_mask_bench TOKENIZER_JSON [SYNTHETIC_SIZE]\n";
        return 2;
    }
    try {
        return vkf::run(argv[1], argc == 3 ? std::stoul(argv[2]) : 250000);
    } catch (const std::exception& e) {
        std::cerr << "grammar_mask_bench: " << e.what() << '\n';
        return 1;
    }
}
