// The project's own BLOOM model (models/kjv-bloom, trained with a byte-level BPE tokenizer):
// every text of tokenizer_check.json, which the training script's Python encoder wrote, encodes
// to exactly its ids, and decodes back. Skipped until the model's files are in the source tree.

#include "host/io/json.hpp"
#include "host/text/tokenizer.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace vkf::text {
namespace {

TEST(TokenizerKjv, TrainingScriptIds) {
    const std::filesystem::path dir = std::filesystem::path(VKF_SOURCE_DIR) / "models" / "kjv-bloom";
    const std::filesystem::path check = dir / "tokenizer_check.json";
    if (!std::filesystem::exists(check)) {
        GTEST_SKIP() << check.string() << " is not there yet (the trained model brings it)";
    }
    const Tokenizer tokenizer = Tokenizer::load(dir / "tokenizer.json");
    const JsonValue cases = read_json_file(check);
    std::size_t ids_compared = 0;
    for (const JsonValue& c : cases.as_array()) {
        const std::string& text = c.at("text").as_string();
        std::vector<TokenId> expected;
        for (const JsonValue& id : c.at("ids").as_array()) {
            expected.push_back(id.as_integer<TokenId>());
        }
        const std::vector<TokenId> ids = tokenizer.encode(text);
        EXPECT_EQ(ids, expected) << c.location() << ": " << text;
        ids_compared += expected.size();
        // Decoding without the special tokens gives the text back (byte-level BPE loses nothing).
        EXPECT_EQ(tokenizer.decode(ids, true), text) << c.location();
    }
    EXPECT_GT(cases.size(), 0u);
    std::printf("%zu texts, %zu ids as the training script's encoder gives them\n", cases.size(), ids_compared);
}

}  // namespace
}  // namespace vkf::text
