// GenerationOptions::grammar in the one generation loop (BatchGenerator, host/model/
// batch_generation.cpp), over RandomFront (random logits, no model): every text is a sentence
// of the grammar and ends with the end-of-text token once complete; a complete text nothing can
// continue ends without one; the mask holds against logit_bias; an ambiguous grammar or a text
// no token continues ends that generation alone with StopReason::Error and a message.

#include "host/grammar/token_constraint.hpp"
#include "host/model/batch_generation.hpp"
#include "tests/grammar/random_front.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace vkf {
namespace {

const std::vector<std::string> kPieces{"a", "b", "c", "ye", "s", "yes", "no", ".", "n", "o", "x", "aaaa", ""};
constexpr std::uint32_t kEnd = 12;  // the empty piece: the end-of-text token

std::shared_ptr<const grammar::Constraint> constraint(std::string_view gbnf) {
    return std::make_shared<const grammar::Constraint>(grammar::Constraint{
        .grammar = grammar::parse_gbnf(gbnf), .pieces = std::make_shared<const grammar::PieceTrie>(kPieces)});
}

std::string text_of(const GenerationResult& r) {
    std::string text;
    for (const std::uint32_t t : r.tokens) {
        text += kPieces.at(t);
    }
    return text;
}

GenerationOptions options(std::shared_ptr<const grammar::Constraint> c, std::uint64_t seed, bool end = true) {
    return {.n_predict = 50,
            .sampling = {.temperature = 1.0f, .seed = seed},
            .stop_ids = end ? std::vector<std::uint32_t>{kEnd} : std::vector<std::uint32_t>{},
            .grammar = std::move(c)};
}

TEST(GenerationGrammar, TextsAreSentencesEndedOnceComplete) {
    const auto c = constraint(R"(root ::= ("yes" | "no") "." | "x"{2,3})");
    std::set<std::string> seen;
    for (std::uint64_t seed = 0; seed < 40; ++seed) {
        RandomFront front(std::vector<float>(kPieces.size(), 0.0f), seed);
        BatchGenerator generator(front);
        const std::uint32_t prompt[] = {0};
        const SequenceId id = generator.submit(prompt, options(c, seed));
        const GenerationResult r = generator.run().at(id);
        ASSERT_EQ(r.stop, StopReason::StopToken) << r.error;
        ASSERT_EQ(r.tokens.back(), kEnd);
        const std::string text = text_of(r);
        EXPECT_TRUE(text == "yes." || text == "no." || text == "xx" || text == "xxx") << text;
        seen.insert(text);
    }
    EXPECT_GE(seen.size(), 3u) << "random sampling reaches several sentences";
}

TEST(GenerationGrammar, CompleteWithNothingToAddEndsWithoutAToken) {
    RandomFront front(std::vector<float>(kPieces.size(), 0.0f), 1);
    BatchGenerator generator(front);
    const std::uint32_t prompt[] = {0};
    const SequenceId id = generator.submit(prompt, options(constraint(R"(root ::= "no.")"), 1, false));
    const GenerationResult r = generator.run().at(id);
    EXPECT_EQ(r.stop, StopReason::StopToken);
    EXPECT_EQ(text_of(r), "no.");
}

TEST(GenerationGrammar, MaskHoldsAgainstLogitBiasAndGreedy) {
    std::vector<float> boost(kPieces.size(), 0.0f);
    boost[10] = 50.0f;  // "x": by far the likeliest, and not allowed
    RandomFront front(boost, 2);
    BatchGenerator generator(front);
    const std::uint32_t prompt[] = {0};
    GenerationOptions o = options(constraint(R"(root ::= [abc]+ ".")"), 2);
    o.sampling.temperature = 0.0f;
    o.sampling.logit_bias = {{10, 100.0f}, {kEnd, 100.0f}};  // the end: only once complete
    const SequenceId id = generator.submit(prompt, o);
    const GenerationResult r = generator.run().at(id);
    EXPECT_EQ(r.stop, StopReason::StopToken);
    const std::string text = text_of(r);
    EXPECT_TRUE(text.size() >= 2 && text.back() == '.' && text.find('x') == std::string::npos) << text;
}

TEST(GenerationGrammar, ErrorsEndTheirGenerationAlone) {
    std::vector<float> boost(kPieces.size(), 0.0f);
    boost[11] = 50.0f;  // "aaaa"
    RandomFront front(boost, 3);
    BatchGenerator generator(front);
    const std::uint32_t prompt[] = {0};
    // 2^n parses after n a's: the mask's walk over "aaaa" passes the matcher's bound soon.
    const SequenceId ambiguous =
        generator.submit(prompt, options(constraint("root ::= x\nx ::= \"a\" x \"b\" | \"a\" x \"c\" | \"\""), 3));
    // "z" is in no piece: nothing continues the text.
    const SequenceId stuck = generator.submit(prompt, options(constraint(R"(root ::= "no" "z")"), 4));
    const SequenceId fine = generator.submit(prompt, options(constraint(R"(root ::= "yes.")"), 5));
    const auto results = generator.run();
    EXPECT_EQ(results.at(ambiguous).stop, StopReason::Error);
    EXPECT_NE(results.at(ambiguous).error.find("parses in more than"), std::string::npos)
        << results.at(ambiguous).error;
    EXPECT_EQ(results.at(stuck).stop, StopReason::Error);
    EXPECT_EQ(text_of(results.at(stuck)), "no");
    EXPECT_NE(results.at(stuck).error.find("no token of the vocabulary"), std::string::npos);
    EXPECT_EQ(results.at(fine).stop, StopReason::StopToken);
    EXPECT_EQ(text_of(results.at(fine)), "yes.");
}

}  // namespace
}  // namespace vkf
