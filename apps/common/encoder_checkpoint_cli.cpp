#include "apps/common/encoder_checkpoint_cli.hpp"

#include "apps/common/app_main.hpp"
#include "apps/common/options.hpp"
#include "base/error.hpp"
#include "base/format.hpp"
#include "host/ops/attention.hpp"
#include "host/spec/encoder_checkpoint.hpp"

#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace vkf::app {

namespace {

constexpr const char* kAbout =
    "Writes a JinaBERT (jina-embeddings-v2) checkpoint with seeded random weights in the\n"
    "Hugging Face format: DIR/config.json plus DIR/model.safetensors (or shards and an index),\n"
    "tensors named as jina-embeddings-v2 names them. Give --preset tiny, or --layers,\n"
    "--hidden, --heads and --vocab.\n";

struct Options {
    std::string out;
    std::string family;
    std::optional<std::string> preset;
    std::optional<std::uint32_t> layers, hidden, heads, vocab, intermediate, max_positions;
    DType dtype = DType::F16;
    int shards = 1;
    std::uint64_t seed = 1;
    bool bert_prefix = false;
};

void declare_options(CLI::App& cli, Options& o) {
    add_text(cli, "--out", "DIR", o.out, "where to write (created when needed)")->required();
    add_choice(cli, "--family", o.family, {{"jina-bert", "jina-bert"}}, "the encoder family")->required();
    add_choice(cli, "--preset", o.preset, {{"tiny", "tiny"}, {"jina-v2-small", "jina-v2-small"}},
               "tiny: 2 layers, hidden 96, 3 heads of 32, intermediate 128, vocab 512\n"
               "jina-v2-small: jina-embeddings-v2-small-en's shape (4 layers,\n"
               "hidden 512, 8 heads, intermediate 2048, vocab 30528)");
    add_integer(cli, "--layers", "N", o.layers, 1u, "encoder layers");
    add_integer(cli, "--hidden", "H", o.hidden, 1u, "hidden_size");
    add_integer(cli, "--heads", "N", o.heads, 1u, "attention heads; must divide the width");
    add_integer(cli, "--vocab", "V", o.vocab, 1u, "vocabulary size");
    add_integer(cli, "--intermediate", "I", o.intermediate, 1u,
                "intermediate_size: each half of mlp.gated_layers (default 4/3 hidden,\nrounded up to 32)");
    add_integer(cli, "--max-positions", "N", o.max_positions, 1u,
                "max_position_embeddings recorded in config.json (default 8192)");
    add_choice(cli, "--dtype", o.dtype, {{"f32", DType::F32}, {"f16", DType::F16}, {"bf16", DType::BF16}},
               "weight storage type (default f16)");
    add_integer(cli, "--shards", "N", o.shards, 1, "split the weights over N files (default 1)");
    add_integer(cli, "--seed", "S", o.seed, std::uint64_t{0}, "random seed (default 1)");
    cli.add_flag("--bert-prefix", o.bert_prefix, "name every tensor bert.* as JinaBertForMaskedLM checkpoints do");
}

EncoderConfig build_config(const Options& o) {
    EncoderConfig config;
    if (o.preset == "tiny") {
        config.n_layer = 2;
        config.hidden = 96;
        config.n_head = 3;
        config.intermediate = 128;
        config.vocab_size = 512;
    } else if (o.preset == "jina-v2-small") {
        config.n_layer = 4;
        config.hidden = 512;
        config.n_head = 8;
        config.intermediate = 2048;
        config.vocab_size = 30528;
    }
    config.n_layer = o.layers.value_or(config.n_layer);
    config.hidden = o.hidden.value_or(config.hidden);
    config.n_head = o.heads.value_or(config.n_head);
    config.vocab_size = o.vocab.value_or(config.vocab_size);
    if (config.n_layer == 0 || config.hidden == 0 || config.n_head == 0 || config.vocab_size == 0) {
        throw UsageError("without a preset, --layers, --hidden, --heads and --vocab are required");
    }
    if (config.hidden % config.n_head != 0) {
        throw UsageError(fmt::format("--hidden {} is not a multiple of --heads {}", config.hidden, config.n_head));
    }
    config.head_dim = config.hidden / config.n_head;
    if (o.intermediate) {
        config.intermediate = *o.intermediate;
    } else if (config.intermediate == 0 || o.hidden) {
        config.intermediate = (config.hidden * 4 / 3 + 31) / 32 * 32;
    }
    config.max_position_embeddings = o.max_positions.value_or(config.max_position_embeddings);
    try {
        check_head_dim(config.head_dim);
    } catch (const Error& e) {
        fmt::print(stderr,
                   "vkf-make-checkpoint: warning: --hidden {} / --heads {} gives {}: vkf-embed will refuse this "
                   "checkpoint\n",
                   config.hidden, config.n_head, e.what());
    }
    try {
        validate(config);
    } catch (const Error& e) {
        throw UsageError(e.what());
    }
    return config;
}

int run(const Options& o) {
    const EncoderConfig config = build_config(o);
    const auto start = std::chrono::steady_clock::now();
    fmt::print(
        stderr,
        "vkf-make-checkpoint: writing {} ({} layers, hidden {}, {} heads, vocab {}, intermediate {}, {}) to {}\n",
        encoder_family_name(config.family), config.n_layer, config.hidden, config.n_head, config.vocab_size,
        config.intermediate, dtype_name(o.dtype), o.out);
    std::uint64_t total_bytes = 0;
    write_random_encoder_checkpoint(
        o.out, config, {.seed = o.seed, .dtype = o.dtype, .shards = o.shards, .bert_prefix = o.bert_prefix},
        [&](const CheckpointWriteProgress& p) { total_bytes = p.total_bytes; });
    fmt::print("{}: {} weights in {}, {:.1f} s\n", o.out, size_text(total_bytes),
               count_text(static_cast<std::uint64_t>(o.shards), "file"),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return kExitOk;
}

}  // namespace

bool names_encoder_family(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--family=jina-bert" ||
            (arg == "--family" && i + 1 < argc && std::string_view(argv[i + 1]) == "jina-bert")) {
            return true;
        }
    }
    return false;
}

int make_encoder_checkpoint_main(int argc, char** argv) {
    CommandLine cli("vkf-make-checkpoint", kAbout);
    Options options;
    declare_options(cli, options);
    return run_app(cli, argc, argv, [&] { return run(options); });
}

}  // namespace vkf::app
