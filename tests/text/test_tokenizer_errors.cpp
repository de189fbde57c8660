// Malformed and unsupported tokenizer.json documents are refused when they are loaded, with a
// vkf::Error naming the file, the key path and the problem: each case is byte_bpe.json with one
// thing changed.

#include "base/error.hpp"
#include "host/io/json.hpp"
#include "host/text/tokenizer.hpp"
#include "tests/support/test_support.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace vkf::text {
namespace {

using nlohmann::ordered_json;
using vkf::test::error_message;

ordered_json base() {
    std::ifstream in(std::string(VKF_TEXT_DATA) + "/byte_bpe.json");
    return ordered_json::parse(in);
}

// The message loading `edit`ed byte_bpe.json gives (as "bad.json").
std::string refusal(const std::function<void(ordered_json&)>& edit) {
    ordered_json document = base();
    edit(document);
    return error_message([&] { Tokenizer::parse(document.dump(), "bad.json"); });
}

struct Case {
    const char* what;
    std::function<void(ordered_json&)> edit;
    const char* expected;  // the whole message after "bad.json: "
};

TEST(TokenizerErrors, UnsupportedComponentsAreRefusedByName) {
    const std::vector<Case> cases = {
        {"model type", [](ordered_json& d) { d["model"]["type"] = "Unigram"; },
         "model.type: 'Unigram' is not supported (only BPE and WordPiece)"},
        {"normalizer",
         [](ordered_json& d) {
             d["normalizer"] = {{"type", "Precompiled"}};
         },
         "normalizer.type: 'Precompiled' is not supported (supported normalizers: NFC, NFD, NFKC, NFKD, "
         "Lowercase, Strip, Prepend, Replace, ByteLevel, BertNormalizer, Sequence)"},
        {"pre-tokenizer in a sequence",
         [](ordered_json& d) {
             d["pre_tokenizer"] = {{"type", "Sequence"},
                                   {"pretokenizers", {d["pre_tokenizer"], {{"type", "Metaspace"}}}}};
         },
         "pre_tokenizer.pretokenizers[1].type: 'Metaspace' is not supported (supported pre-tokenizers: ByteLevel, "
         "Split, Digits, Punctuation, Whitespace, WhitespaceSplit, BertPreTokenizer, Sequence)"},
        {"post-processor",
         [](ordered_json& d) {
             d["post_processor"] = {{"type", "Custom"}};
         },
         "post_processor.type: 'Custom' is not supported (supported post-processors: ByteLevel, TemplateProcessing, "
         "BertProcessing, RobertaProcessing, Sequence)"},
        {"decoder",
         [](ordered_json& d) {
             d["decoder"] = {{"type", "CTC"}, {"pad_token", "<pad>"}};
         },
         "decoder.type: 'CTC' is not supported (supported decoders: ByteLevel, Replace, Strip, Fuse, WordPiece, "
         "Sequence)"},
        {"a regex Replace decoder",
         [](ordered_json& d) {
             d["decoder"] = {{"type", "Replace"}, {"pattern", {{"Regex", "a+"}}}, {"content", "b"}};
         },
         "decoder.pattern: only {\"String\": ...} patterns are supported in a Replace decoder"},
        {"dropout", [](ordered_json& d) { d["model"]["dropout"] = 0.1; },
         "model.dropout: dropout 0.100000 is not supported (it makes encoding random); only null or 0"},
        {"truncation",
         [](ordered_json& d) {
             d["truncation"] = {{"max_length", 512}};
         },
         "truncation: only null is supported (vkformer does not truncate)"},
        {"fixed padding",
         [](ordered_json& d) {
             d["padding"] = {{"strategy", {{"Fixed", 512}}}};
         },
         "padding: only null or BatchLongest without pad_to_multiple_of is supported (vkformer does not pad)"},
        {"padding to a multiple",
         [](ordered_json& d) {
             d["padding"] = {{"strategy", "BatchLongest"}, {"pad_to_multiple_of", 8}};
         },
         "padding: only null or BatchLongest without pad_to_multiple_of is supported (vkformer does not pad)"},
        {"version", [](ordered_json& d) { d["version"] = "2.0"; }, "version: version '2.0' is not known (only 1.0)"},
    };
    for (const Case& c : cases) {
        EXPECT_EQ(refusal(c.edit), std::string("bad.json: ") + c.expected) << c.what;
    }
}

// Padding to the longest text of a batch changes nothing for one text.
TEST(TokenizerErrors, BatchLongestPaddingIsAccepted) {
    ordered_json document = base();
    document["padding"] = {
        {"strategy", "BatchLongest"}, {"direction", "Left"}, {"pad_to_multiple_of", nullptr}, {"pad_id", 3},
        {"pad_type_id", 0},           {"pad_token", "<pad>"}};
    EXPECT_EQ(Tokenizer::parse(document.dump(), "padded.json").encode("Hello"), (std::vector<TokenId>{271}));
}

TEST(TokenizerErrors, MalformedDocumentsAreRefusedWithTheKeyPath) {
    const std::vector<Case> cases = {
        {"no model", [](ordered_json& d) { d.erase("model"); }, "missing key 'model'"},
        {"no vocab", [](ordered_json& d) { d["model"].erase("vocab"); }, "model: missing key 'vocab'"},
        {"no merges", [](ordered_json& d) { d["model"].erase("merges"); }, "model: missing key 'merges'"},
        {"no type", [](ordered_json& d) { d["pre_tokenizer"].erase("type"); }, "pre_tokenizer: missing key 'type'"},
        {"ByteLevel without add_prefix_space", [](ordered_json& d) { d["pre_tokenizer"].erase("add_prefix_space"); },
         "pre_tokenizer: missing key 'add_prefix_space'"},
        {"added token without special", [](ordered_json& d) { d["added_tokens"][1].erase("special"); },
         "added_tokens[1]: missing key 'special'"},
        {"merge of an unknown token", [](ordered_json& d) { d["model"]["merges"].push_back("q zz"); },
         "model.merges[31]: 'zz' is not in model.vocab"},
        {"merge whose result is unknown", [](ordered_json& d) { d["model"]["merges"].push_back("x y"); },
         "model.merges[31]: the merged token 'xy' is not in model.vocab"},
        {"merge of three tokens", [](ordered_json& d) { d["model"]["merges"][2] = "a b c"; },
         "model.merges[2]: 'a b c' is not two tokens separated by one space"},
        {"merge pair of three",
         [](ordered_json& d) {
             d["model"]["merges"][2] = {"a", "b", "c"};
         },
         "model.merges[2]: expected \"a b\" or [\"a\", \"b\"]"},
        {"merge of a number", [](ordered_json& d) { d["model"]["merges"][0] = 7; },
         "model.merges[0]: expected \"a b\" or [\"a\", \"b\"]"},
        {"duplicate vocabulary ids", [](ordered_json& d) { d["model"]["vocab"]["b"] = 97; },
         "model.vocab.b: id 97 is also the id of 'a'"},
        // Gaps in the ids load (issue 32), but not a table of billions of them.
        {"vocabulary id out of range", [](ordered_json& d) { d["model"]["vocab"]["b"] = 2000000; },
         "model.vocab.b: id 2000000 is out of range: 287 tokens may leave gaps in their ids, but the largest must be "
         "below 1048576"},
        {"empty vocabulary token", [](ordered_json& d) { d["model"]["vocab"][""] = 300; },
         "model.vocab.: the empty string is not a token"},
        {"negative id", [](ordered_json& d) { d["model"]["vocab"]["b"] = -1; },
         "model.vocab.b: expected a non-negative integer, got number -1"},
        {"unk_token not in the vocabulary", [](ordered_json& d) { d["model"]["unk_token"] = "<unk>"; },
         "model.unk_token: unk_token '<unk>' is not in model.vocab"},
        {"added token with another id", [](ordered_json& d) { d["added_tokens"][1]["id"] = 5000; },
         "added_tokens[1].id: '<mask>' has id 5000, but Hugging Face gives it 288 (the next id after model.vocab "
         "and the added tokens before it)"},
        {"added token that is a vocabulary token", [](ordered_json& d) { d["added_tokens"][0]["content"] = "Hello"; },
         "added_tokens[0].id: 'Hello' has id 287, but Hugging Face gives it 271 (its id in model.vocab)"},
        {"repeated added token", [](ordered_json& d) { d["added_tokens"][1]["content"] = "<|endoftext|>"; },
         "added_tokens[1].content: '<|endoftext|>' is an added token already"},
        {"bad regex",
         [](ordered_json& d) {
             d["pre_tokenizer"] = {
                 {"type", "Split"}, {"pattern", {{"Regex", "(ab"}}}, {"behavior", "Isolated"}, {"invert", false}};
         },
         "pre_tokenizer.pattern.Regex: cannot compile '(ab': missing closing parenthesis at offset 3"},
        {"bad pattern kind",
         [](ordered_json& d) {
             d["pre_tokenizer"] = {
                 {"type", "Split"}, {"pattern", {{"Glob", "*"}}}, {"behavior", "Isolated"}, {"invert", false}};
         },
         "pre_tokenizer.pattern: expected one of {\"String\": ...} or {\"Regex\": ...}, got key 'Glob'"},
        {"bad behavior",
         [](ordered_json& d) {
             d["pre_tokenizer"] = {
                 {"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", "Isolate"}, {"invert", false}};
         },
         "pre_tokenizer.behavior: 'Isolate' is not a split behavior (Removed, Isolated, MergedWithPrevious, "
         "MergedWithNext or Contiguous)"},
        {"template token not among special_tokens",
         [](ordered_json& d) {
             d["post_processor"] = {{"type", "TemplateProcessing"},
                                    {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}}},
                                    {"special_tokens", ordered_json::object()}};
         },
         "post_processor.single[0].SpecialToken.id: '<s>' is not in special_tokens"},
        {"template special id out of range",
         [](ordered_json& d) {
             d["post_processor"] = {
                 {"type", "TemplateProcessing"},
                 {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}}},
                 {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {9999}}, {"tokens", {"<s>"}}}}}}};
         },
         "post_processor.special_tokens.<s>.ids[0]: id 9999 is out of range for a vocabulary of 291 tokens"},
        {"template with sequence B",
         [](ordered_json& d) {
             d["post_processor"] = {{"type", "TemplateProcessing"},
                                    {"single", {{{"Sequence", {{"id", "B"}, {"type_id", 0}}}}}},
                                    {"special_tokens", ordered_json::object()}};
         },
         "post_processor.single[0].Sequence.id: the single template can only hold sequence A, not 'B'"},
        {"Bert cls out of range",
         [](ordered_json& d) {
             d["post_processor"] = {{"type", "BertProcessing"}, {"cls", {"[CLS]", 4000}}, {"sep", {"[SEP]", 1}}};
         },
         "post_processor.cls[1]: id 4000 is out of range for a vocabulary of 291 tokens"},
        {"Strip decoder of two characters",
         [](ordered_json& d) {
             d["decoder"] = {{"type", "Strip"}, {"content", "ab"}, {"start", 1}, {"stop", 0}};
         },
         "decoder.content: expected one character, got 'ab'"},
        {"normalizer sequence of a string",
         [](ordered_json& d) {
             d["normalizer"] = {{"type", "Sequence"}, {"normalizers", "NFC"}};
         },
         "normalizer.normalizers: expected an array, got string"},
    };
    for (const Case& c : cases) {
        EXPECT_EQ(refusal(c.edit), std::string("bad.json: ") + c.expected) << c.what;
    }
}

// BERT's tokenizer.json (bert_wordpiece.json) with one thing changed.
std::string bert_refusal(const std::function<void(ordered_json&)>& edit) {
    std::ifstream in(std::string(VKF_TEXT_DATA) + "/bert_wordpiece.json");
    ordered_json document = ordered_json::parse(in);
    edit(document);
    return error_message([&] { Tokenizer::parse(document.dump(), "bad.json"); });
}

TEST(TokenizerErrors, MalformedBertTokenizersAreRefused) {
    const std::vector<Case> cases = {
        {"WordPiece without vocab", [](ordered_json& d) { d["model"].erase("vocab"); }, "model: missing key 'vocab'"},
        {"WordPiece without unk_token", [](ordered_json& d) { d["model"].erase("unk_token"); },
         "model: missing key 'unk_token'"},
        {"unk_token not in the vocabulary", [](ordered_json& d) { d["model"]["unk_token"] = "<unk>"; },
         "model.unk_token: unk_token '<unk>' is not in model.vocab"},
        {"unk_token null", [](ordered_json& d) { d["model"]["unk_token"] = nullptr; },
         "model.unk_token: expected a string, got null"},
        {"WordPiece without max_input_chars_per_word",
         [](ordered_json& d) { d["model"].erase("max_input_chars_per_word"); },
         "model: missing key 'max_input_chars_per_word'"},
        {"negative max_input_chars_per_word", [](ordered_json& d) { d["model"]["max_input_chars_per_word"] = -1; },
         "model.max_input_chars_per_word: expected a non-negative integer, got number -1"},
        {"WordPiece without continuing_subword_prefix",
         [](ordered_json& d) { d["model"].erase("continuing_subword_prefix"); },
         "model: missing key 'continuing_subword_prefix'"},
        {"duplicate WordPiece ids", [](ordered_json& d) { d["model"]["vocab"]["##s"] = 16; },
         "model.vocab.##s: id 16 is also the id of 'hello'"},
        {"WordPiece id out of range", [](ordered_json& d) { d["model"]["vocab"]["##s"] = 4000000000u; },
         "model.vocab.##s: id 4000000000 is out of range: 59 tokens may leave gaps in their ids, but the largest "
         "must be below 1048576"},
        {"another model type", [](ordered_json& d) { d["model"]["type"] = "WordLevel"; },
         "model.type: 'WordLevel' is not supported (only BPE and WordPiece)"},
        {"BertNormalizer without lowercase", [](ordered_json& d) { d["normalizer"].erase("lowercase"); },
         "normalizer: missing key 'lowercase'"},
        {"BertNormalizer strip_accents not a boolean",
         [](ordered_json& d) { d["normalizer"]["strip_accents"] = "yes"; },
         "normalizer.strip_accents: expected a boolean, got string"},
        {"WordPiece decoder without cleanup", [](ordered_json& d) { d["decoder"].erase("cleanup"); },
         "decoder: missing key 'cleanup'"},
        {"template [CLS] id out of range",
         [](ordered_json& d) { d["post_processor"]["special_tokens"]["[CLS]"]["ids"][0] = 59; },
         "post_processor.special_tokens.[CLS].ids[0]: id 59 is out of range for a vocabulary of 59 tokens"},
        {"another pre-tokenizer", [](ordered_json& d) { d["pre_tokenizer"]["type"] = "Metaspace"; },
         "pre_tokenizer.type: 'Metaspace' is not supported (supported pre-tokenizers: ByteLevel, Split, Digits, "
         "Punctuation, Whitespace, WhitespaceSplit, BertPreTokenizer, Sequence)"},
    };
    for (const Case& c : cases) {
        EXPECT_EQ(bert_refusal(c.edit), std::string("bad.json: ") + c.expected) << c.what;
    }
}

TEST(TokenizerErrors, FilesThatAreNotJsonOrNotUtf8) {
    const std::string truncated = error_message([] { Tokenizer::parse("{\"model\": ", "bad.json"); });
    EXPECT_EQ(truncated.rfind("bad.json: line 1, column ", 0), 0u) << truncated;
    EXPECT_NE(truncated.find("unexpected end of input"), std::string::npos) << truncated;
    const std::string utf8 = error_message([] { Tokenizer::parse("{\"model\": \"\xff\"}", "bad.json"); });
    EXPECT_NE(utf8.find("bad.json: line 1, column"), std::string::npos) << utf8;
    EXPECT_NE(utf8.find("invalid string: ill-formed UTF-8 byte"), std::string::npos) << utf8;
    EXPECT_EQ(error_message([] { Tokenizer::parse("[]", "bad.json"); }), "bad.json: expected an object, got array");

    vkf::test::TempDir dir("vkf_tokenizer_errors");
    const std::string missing = (dir.path() / "missing.json").string();
    EXPECT_EQ(error_message([&] { Tokenizer::load(missing); }),
              "JSON file '" + missing + "': cannot open for reading: No such file or directory");
    const std::string file = (dir.path() / "tokenizer.json").string();
    {
        ordered_json document = base();
        document["model"]["type"] = "Unigram";
        std::ofstream(file) << document.dump();
    }
    EXPECT_EQ(error_message([&] { Tokenizer::load(file); }),
              file + ": model.type: 'Unigram' is not supported (only BPE and WordPiece)");
}

// An id inside the vocabulary's size that no token has (a gap in model.vocab's ids) is refused
// as an id past the end is: decoding it gave an empty piece, silently.
TEST(TokenizerErrors, DecodingAnIdInAVocabularyGapIsAnError) {
    ordered_json document = base();
    document["model"]["vocab"]["-x"] = 300;  // was 286, the last id: 286 and 291..299 are gaps now
    const Tokenizer tokenizer = Tokenizer::parse(document.dump(), "gap.json");
    EXPECT_EQ(tokenizer.vocab_size(), 301U);
    EXPECT_EQ(tokenizer.decode(std::vector<TokenId>{300}), "-x");
    EXPECT_EQ(tokenizer.decode(std::vector<TokenId>{287}), "<|endoftext|>");  // an added token fills 287
    for (const TokenId gap : {TokenId{286}, TokenId{295}}) {
        const std::string expected = fmt::format(
            "gap.json: token id {} is not in the vocabulary: no token has that id, a gap below the vocabulary's 301 "
            "ids",
            gap);
        EXPECT_EQ(error_message([&] { tokenizer.decode(std::vector<TokenId>{271, gap}); }), expected);
        EXPECT_EQ(error_message([&] { tokenizer.decode_bytes(std::vector<TokenId>{gap}, true); }), expected);
        EXPECT_EQ(error_message([&] { tokenizer.token(gap); }), expected);
    }
    EXPECT_EQ(error_message([&] { tokenizer.decode(std::vector<TokenId>{301}); }),
              "gap.json: token id 301 is not in the vocabulary (301 ids)");
}

}  // namespace
}  // namespace vkf::text
