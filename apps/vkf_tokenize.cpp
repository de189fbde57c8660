// vkf-tokenize: text to token ids and back with a Hugging Face tokenizer.json, the same ids
// Hugging Face's tokenizers give (host/text/tokenizer.hpp).

#include "apps/common/app_main.hpp"
#include "apps/common/model_tokenizer.hpp"
#include "apps/common/options.hpp"
#include "apps/common/text_source.hpp"
#include "base/error.hpp"
#include "host/io/gguf.hpp"
#include "host/io/json.hpp"
#include "host/io/text_file.hpp"
#include "host/text/tokenizer.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace {

constexpr const char* kAbout =
    "Encodes text with a Hugging Face tokenizer.json (byte-level BPE: BLOOM, MPT, GPT-2 and most\n"
    "current models; WordPiece: BERT) and prints the token ids separated by spaces, or with\n"
    "--decode prints the text of ids. Special tokens (BOS/EOS, CLS/SEP) are added as the\n"
    "tokenizer's post-processor says unless --no-special. A component the library does not\n"
    "implement is refused by name. A llama.cpp GGUF file gives the tokenizer its\n"
    "tokenizer.ggml.* describe (gpt2 BPE, bert WordPiece).\n";

struct Options {
    std::string tokenizer;
    std::optional<std::string> text;
    std::optional<std::string> file;
    std::optional<std::vector<std::uint32_t>> decode;
    bool json = false;
    bool no_special = false;
    bool skip_special = false;
};

void declare_options(CLI::App& cli, Options& o) {
    using namespace vkf::app;
    add_text(cli, "--tokenizer", "FILE", o.tokenizer, "the tokenizer.json or a GGUF model file (required)")->required();
    add_text(cli, "--text", "T", o.text, "the text to encode");
    add_text(cli, "--file", "F", o.file, "a file whose bytes are the text to encode");
    add_counts(cli, "--decode", "1,2,3", o.decode, "ids to decode instead (comma-separated)", 0);
    cli.add_flag("--json", o.json,
                 "print one JSON object: {\"ids\": [...], \"tokens\": [...]} (tokens: the\n"
                 "vocabulary's strings), or with --decode {\"text\": \"...\"}");
    cli.add_flag("--no-special", o.no_special, "encode without the post-processor's special tokens");
    cli.add_flag("--skip-special", o.skip_special, "leave special tokens out of --decode's text");
}

int run(const Options& o) {
    using vkf::app::UsageError;
    const int inputs = (o.text ? 1 : 0) + (o.file ? 1 : 0) + (o.decode ? 1 : 0);
    if (inputs != 1) {
        throw UsageError("give one of --text, --file and --decode");
    }
    if (o.decode && o.no_special) {
        throw UsageError("--no-special is for encoding; --decode takes --skip-special");
    }
    if (!o.decode && o.skip_special) {
        throw UsageError("--skip-special is for --decode; encoding takes --no-special");
    }
    std::error_code ignored;
    const vkf::text::Tokenizer tokenizer =
        std::filesystem::is_regular_file(o.tokenizer, ignored) && vkf::looks_like_gguf(o.tokenizer)
            ? vkf::app::load_model_tokenizer(o.tokenizer, "")
            : vkf::text::Tokenizer::load(o.tokenizer);

    if (o.decode) {
        const std::string text = tokenizer.decode(*o.decode, o.skip_special);
        if (o.json) {
            fmt::print("{}\n", vkf::json_text({{"text", text}}, vkf::JsonStyle::Compact));
        } else {
            fmt::print("{}\n", text);
        }
        return vkf::app::kExitOk;
    }

    const std::string text = o.text ? *o.text : vkf::read_text_file(*o.file);
    vkf::app::check_utf8(text, o.text ? std::string("--text") : "'" + *o.file + "'");
    const std::vector<vkf::text::TokenId> ids = tokenizer.encode(text, !o.no_special);
    if (o.json) {
        nlohmann::ordered_json tokens = nlohmann::ordered_json::array();
        for (const vkf::text::TokenId id : ids) {
            tokens.push_back(std::string(tokenizer.token(id)));
        }
        fmt::print("{}\n", vkf::json_text({{"ids", ids}, {"tokens", tokens}}, vkf::JsonStyle::Compact));
    } else {
        fmt::print("{}\n", fmt::join(ids, " "));
    }
    return vkf::app::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    vkf::app::CommandLine cli("vkf-tokenize", kAbout);
    Options options;
    declare_options(cli, options);
    return vkf::app::run_app(cli, argc, argv, [&] { return run(options); });
}
