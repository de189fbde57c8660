// vkf-embed: runs one sequence through a JinaBERT encoder (jina-embeddings-v2) and writes its
// embedding, or every token's state, as a float32 .npy file; --check compares it with the
// double-precision CPU reference encoder.

#include "apps/common/app_main.hpp"
#include "apps/common/model_tokenizer.hpp"
#include "apps/common/options.hpp"
#include "apps/common/text_source.hpp"
#include "base/error.hpp"
#include "base/format.hpp"
#include "host/io/npy.hpp"
#include "host/model/encoder.hpp"
#include "host/reference/encoder.hpp"
#include "host/reference/pooling.hpp"
#include "host/util/compare.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace {

constexpr const char* kAbout =
    "Embeds one text (or list of token ids) with a JinaBERT encoder (jina-embeddings-v2:\n"
    "config.json with model_type bert and position_embedding_type alibi, safetensors\n"
    "weights named with or without bert.) and writes the float32 result to --out: the mean of\n"
    "the token states (default, as jina-embeddings-v2 and sentence-transformers pool), the\n"
    "first token's state (--pooling cls), both [hidden], or every token's state [tokens,\n"
    "hidden] (--pooling none). All tokens attend to each other; one sequence per run.\n";

struct Options {
    std::string model;
    std::string out;
    std::vector<std::uint32_t> ids;
    std::optional<std::string> text;
    std::string tokenizer;
    vkf::Pooling pooling = vkf::Pooling::Mean;
    bool normalize = false;
    std::optional<std::uint32_t> window;
    std::optional<vkf::WeightFormat> weights;
    vkf::app::DeviceOptions device;
    bool skip_weight_check = false;
    bool check = false;
    double check_tolerance = 1e-3;
    bool quiet = false;
};

std::vector<std::uint32_t> parse_ids(const std::string& option, const std::string& text) {
    std::vector<std::uint32_t> ids = vkf::app::parse_counts(option, text, 0);
    if (ids.empty()) {
        throw vkf::app::UsageError(option + ": no token ids given");
    }
    return ids;
}

void declare_options(CLI::App& cli, Options& o) {
    using namespace vkf::app;
    add_text(cli, "--model", "DIR", o.model, "the checkpoint directory, or a llama.cpp jina-bert-v2 GGUF file")
        ->required();
    add_text(cli, "--out", "FILE.npy", o.out, "where to write the float32 result")->required();
    const auto no_input_yet = [&o] {
        if (!o.ids.empty() || o.text) {
            throw UsageError("give the input once, with --prompt or --prompt-ids");
        }
    };
    add_parsed_option(cli, "--prompt", "TEXT", "the text (tokenized with the model's tokenizer.json)",
                      [&o, no_input_yet](const std::string& text) {
                          no_input_yet();
                          o.text = text;
                      });
    add_parsed_option(cli, "--prompt-ids", "LIST", "token ids, separated by commas",
                      [&o, no_input_yet](const std::string& text) {
                          no_input_yet();
                          o.ids = parse_ids("--prompt-ids", text);
                      });
    add_text(cli, "--tokenizer", "FILE", o.tokenizer,
             "tokenizer.json (default: the model directory's, or the GGUF's\ntokenizer.ggml.*)");
    add_choice(cli, "--pooling", o.pooling,
               {{"mean", vkf::Pooling::Mean}, {"cls", vkf::Pooling::Cls}, {"none", vkf::Pooling::None}},
               "mean of the token states (default), the first token's, or\nevery token's [tokens, hidden]");
    add_window(cli, o.window,
               "local attention: each token sees the tokens at most W positions\n"
               "away, on both sides (default 0: all)");
    cli.add_flag("--normalize", o.normalize,
                 "divide the pooled embedding by its L2 norm (off by default, as in\n"
                 "jina-embeddings-v2's encode(normalize_embeddings=False))");
    add_weight_format(cli, o.weights,
                      "weight storage on the device (default: f16 for an all-F16\ncheckpoint, else f32)");
    add_device_options(cli, o.device);
    cli.add_flag("--skip-weight-check", o.skip_weight_check,
                 "load weights without refusing NaN or infinite values (checked by default)");
    cli.add_flag("--check", o.check,
                 "run the double-precision CPU reference encoder on the same tokens\n"
                 "and print the largest relative error; exit with status 3 when it\n"
                 "is above --check-tolerance");
    add_number(cli, "--check-tolerance", "E", o.check_tolerance, "(default 1e-3)", true);
    cli.add_flag("--quiet", o.quiet, "no progress output on stderr");
}

void check_options(const Options& o) {
    if (o.ids.empty() && !o.text) {
        throw vkf::app::UsageError("give the input with --prompt or --prompt-ids");
    }
    if (o.normalize && o.pooling == vkf::Pooling::None) {
        throw vkf::app::UsageError("--normalize applies to a pooled embedding (--pooling mean or cls), not to none");
    }
}

int run(const Options& o) {
    check_options(o);
    vkf::Context ctx(o.device.context_options());
    std::vector<std::uint32_t> ids = o.ids;
    if (o.text) {
        vkf::app::check_utf8(*o.text, "--prompt");
        ids = vkf::app::load_model_tokenizer(o.model, o.tokenizer).encode(*o.text);
        if (ids.empty()) {
            throw vkf::Error("--prompt: the text encodes to no tokens");
        }
    }
    const auto start = std::chrono::steady_clock::now();
    vkf::Encoder encoder(ctx, o.model,
                         vkf::EncoderOptions{.weights = o.weights, .check_finite_weights = !o.skip_weight_check});
    const vkf::EncoderConfig& c = encoder.config();
    const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!o.quiet) {
        fmt::print(stderr, "vkf-embed: {} ({} layers, hidden {}, {} heads, {} weights) on {}, loaded in {:.2f} s\n",
                   o.model, c.n_layer, c.hidden, c.n_head, vkf::to_string(encoder.weight_format()),
                   ctx.device_info().name, load_s);
        if (ids.size() > c.max_position_embeddings) {
            fmt::print(stderr,
                       "vkf-embed: warning: {} tokens are more than the {} the model was trained for "
                       "(max_position_embeddings); ALiBi runs them, quality may drop\n",
                       ids.size(), c.max_position_embeddings);
        }
    }
    const std::vector<float> result = encoder.encode(
        ids, vkf::EncodeOptions{.pooling = o.pooling, .normalize = o.normalize, .window = o.window.value_or(0)});
    const auto tokens = static_cast<std::uint32_t>(ids.size());
    std::vector<std::size_t> shape{c.hidden};
    if (o.pooling == vkf::Pooling::None) {
        shape.insert(shape.begin(), tokens);
    }
    vkf::write_npy_f32(o.out, shape, result);
    if (!o.quiet) {
        fmt::print(stderr, "vkf-embed: {} tokens -> {} ({} pooling{}), GPU {:.2f} ms, written to {}\n", tokens,
                   vkf::shape_text(shape), vkf::pooling_name(o.pooling), o.normalize ? ", normalized" : "",
                   encoder.last_gpu_ms(), o.out);
    }
    if (!o.check) {
        return vkf::app::kExitOk;
    }
    const vkf::WeightFormat wf = encoder.weight_format();
    const vkf::reference::Encoder reference(
        c, encoder.checkpoint(),
        {.round_weights_to_f16 = wf.dense == vkf::DType::F16 && wf.quant == vkf::QuantFormat::None,
         .quantize = wf.quant,
         .window = o.window.value_or(0)});
    const std::vector<double> expected =
        vkf::reference::pool(reference.forward(ids), tokens, c.hidden, o.pooling, o.normalize);
    const vkf::ErrorStats e = vkf::compare_to_reference(result, expected);
    fmt::print("check: largest relative error {:.3g} against the CPU reference ({})\n", e.max_rel, vkf::describe(e));
    return e.max_rel <= o.check_tolerance ? vkf::app::kExitOk : vkf::app::kExitCheckFailed;
}

}  // namespace

int main(int argc, char** argv) {
    vkf::app::CommandLine cli("vkf-embed", kAbout);
    Options options;
    declare_options(cli, options);
    return vkf::app::run_app(cli, argc, argv, [&] { return run(options); });
}
