// Generates one JSON text per JSON schema through BatchGenerator with the schema's grammar
// (GenerationOptions::grammar), over a toy vocabulary and a front whose logits are seeded random
// numbers: the whole path of constrained decoding but the model. Run by
// schema_outputs_test.py, which makes the schemas and checks every output with an independent
// validator (python3-jsonschema).
//
// usage: schema_outputs SCHEMAS.jsonl OUT.jsonl
//   each input line {"seed": N, "schema": {...}}; each output line {"text": "...", "stop":
//   "stop", "length" or "error", "error": "...", "tokens": N}

#include "base/error.hpp"
#include "host/grammar/json_schema.hpp"
#include "host/io/json.hpp"
#include "host/model/batch_generation.hpp"
#include "tests/grammar/random_front.hpp"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace vkf {
namespace {

// Every byte (as byte-level BPE has them), pieces JSON has many of, and UTF-8 split over tokens
// (é as C3 A9, € as E2 82 + AC) besides whole.
std::vector<std::string> toy_pieces() {
    std::vector<std::string> pieces;
    for (int b = 0; b < 256; ++b) {
        pieces.emplace_back(1, static_cast<char>(b));
    }
    for (const char* p :
         {"{\"",   "\":",  "\": ",     "\",",  "\"}",  "\"]",      "[\"",  "true",         "false",
          "null",  "nu",   "ll",       "12",   "0.",   "e+",       "E-",   "\\n",          "\\u00",
          "\\ud8", "\\\"", "\xC3\xA9", "\xC3", "\xA9", "\xE2\x82", "\xAC", "\xE2\x82\xAC", "\xE6\x97\xA5\xE6\x9C\xAC",
          "  ",    ", ",   "\n",       "ab",   "abc",  "\"a",      "}}",   "]]",           "},",
          "],",    "\t"}) {
        pieces.emplace_back(p);
    }
    return pieces;
}

int run(const char* in_path, const char* out_path) {
    std::vector<std::string> pieces = toy_pieces();
    const std::set<std::string> closing = {"\"", "}", "]", "\"}", "\"]", "}}", "]]"};
    std::vector<float> boost;
    for (const std::string& p : pieces) {
        boost.push_back(closing.contains(p) ? 3.0f : 0.0f);
    }
    const auto eos = static_cast<std::uint32_t>(pieces.size());
    boost.push_back(3.0f);
    const auto trie = std::make_shared<const grammar::PieceTrie>(pieces);

    std::ifstream in(in_path);
    std::ofstream out(out_path);
    std::string line;
    while (std::getline(in, line)) {
        const JsonValue doc = parse_json(line, in_path);
        const auto seed = doc.at("seed").as_uint64();
        nlohmann::ordered_json result;
        try {
            auto constraint = std::make_shared<grammar::Constraint>(grammar::Constraint{
                .grammar = grammar::parse_gbnf(grammar::json_schema_to_gbnf(doc.at("schema"))), .pieces = trie});
            RandomFront front(boost, seed);
            BatchGenerator generator(front);
            const std::uint32_t prompt[] = {0};
            const SequenceId id = generator.submit(prompt, {.n_predict = 4000,
                                                            .sampling = {.temperature = 1.0f, .seed = seed},
                                                            .stop_ids = {eos},
                                                            .grammar = constraint});
            const GenerationResult r = generator.run().at(id);
            std::string text;
            for (const std::uint32_t t : r.tokens) {
                text += t == eos ? "" : pieces[t];
            }
            result = {{"text", text},
                      {"stop", r.stop == StopReason::StopToken ? "stop"
                               : r.stop == StopReason::Error   ? "error"
                                                               : "length"},
                      {"error", r.error},
                      {"tokens", r.tokens.size()}};
        } catch (const Error& e) {
            result = {{"text", ""}, {"stop", "refused"}, {"error", e.what()}, {"tokens", 0}};
        }
        out << result.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
    }
    return 0;
}

}  // namespace
}  // namespace vkf

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: schema_outputs SCHEMAS.jsonl OUT.jsonl\n";
        return 2;
    }
    try {
        return vkf::run(argv[1], argv[2]);
    } catch (const std::exception& e) {
        std::cerr << "schema_outputs: " << e.what() << '\n';
        return 1;
    }
}
