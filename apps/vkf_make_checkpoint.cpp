// vkf-make-checkpoint: writes a seeded random-weight BLOOM or MPT checkpoint in the
// Hugging Face layout (config.json + model.safetensors, or shards and an index), for tests
// and demos where no real model can be downloaded. The loader cannot tell it from a real
// checkpoint of the same shape.

#include "apps/common/app_main.hpp"
#include "apps/common/encoder_checkpoint_cli.hpp"
#include "apps/common/options.hpp"
#include "host/io/safetensors.hpp"
#include "host/ops/attention.hpp"
#include "host/spec/model_config.hpp"
#include "host/spec/random_weights.hpp"
#include "host/util/format.hpp"
#include "runtime/error.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace {

constexpr const char* kAbout =
    "Writes a BLOOM or MPT checkpoint with seeded random weights in exactly the Hugging Face\n"
    "format: DIR/config.json plus DIR/model.safetensors, or with --shards N,\n"
    "model-0000k-of-0000N.safetensors and model.safetensors.index.json. Tensors are written\n"
    "one at a time, so any size fits in bounded memory. Give --preset NAME, or --family with\n"
    "--layers, --hidden, --heads and --vocab.\n";

struct Options {
    std::string out;
    std::optional<vkf::ModelFamily> family;
    std::optional<std::string> preset;
    std::optional<std::uint32_t> layers, hidden, heads, vocab, ffn, max_seq_len;
    vkf::DType dtype = vkf::DType::F16;
    int shards = 1;
    std::uint64_t seed = 1;
    bool bias = false;
    std::optional<double> alibi_bias_max;
    std::optional<double> clip_qkv;
};

void declare_options(CLI::App& cli, Options& o) {
    using namespace vkf::app;
    add_text(cli, "--out", "DIR", o.out, "where to write (created when needed)")->required();
    add_choice(cli, "--family", o.family, {{"bloom", vkf::ModelFamily::Bloom}, {"mpt", vkf::ModelFamily::Mpt}},
               "the model family (implied by a preset); --family jina-bert writes an\n"
               "encoder (its options: --family jina-bert --help)");
    add_choice(cli, "--preset", o.preset, {{"bloom-560m", "bloom-560m"}, {"tiny", "tiny"}},
               "bloom-560m: BLOOM-560m's shape (24 layers, hidden 1024, 16 heads,\n"
               "vocab 250880; about 1 GiB in f16)\n"
               "tiny: 2 layers, hidden 64 and 2 heads (BLOOM) or hidden 192 and\n"
               "6 heads (MPT), head size 32, vocab 512");
    add_integer(cli, "--layers", "N", o.layers, 1u, "transformer blocks");
    add_integer(cli, "--hidden", "H", o.hidden, 1u, "model width (BLOOM hidden_size, MPT d_model)");
    add_integer(cli, "--heads", "N", o.heads, 1u, "attention heads; must divide the width");
    add_integer(cli, "--vocab", "V", o.vocab, 1u, "vocabulary size");
    add_integer(cli, "--ffn", "F", o.ffn, 1u, "MLP width (default 4 * hidden; BLOOM requires exactly that)");
    add_integer(cli, "--max-seq-len", "N", o.max_seq_len, 1u,
                "maximum sequence length recorded in config.json (default 2048)");
    add_choice(cli, "--dtype", o.dtype,
               {{"f32", vkf::DType::F32}, {"f16", vkf::DType::F16}, {"bf16", vkf::DType::BF16}},
               "weight storage type (default f16)");
    add_integer(cli, "--shards", "N", o.shards, 1, "split the weights over N files (default 1)");
    add_integer(cli, "--seed", "S", o.seed, std::uint64_t{0},
                "random seed (default 1); the same seed gives the same weights in\nevery dtype and sharding");
    const std::string mpt_only = "MPT only";
    cli.add_flag("--bias", o.bias, "give every linear layer and LayerNorm a bias (default: no_bias,\nas mpt-7b)")
        ->group(mpt_only);
    add_number(cli, "--alibi-bias-max", "B", o.alibi_bias_max, "ALiBi maximum bias (default 8)", true)->group(mpt_only);
    add_number(cli, "--clip-qkv", "C", o.clip_qkv, "clamp the QKV projection to [-C, C] (default: no clamp)", true)
        ->group(mpt_only);
}

// The configuration the options describe: a preset's shape, then explicit flags on top.
vkf::ModelConfig build_config(const Options& options) {
    std::optional<vkf::ModelFamily> family = options.family;
    if (options.preset == "bloom-560m") {
        if (family == vkf::ModelFamily::Mpt) {
            throw vkf::app::UsageError("--preset bloom-560m is a BLOOM shape; it cannot be combined with --family mpt");
        }
        family = vkf::ModelFamily::Bloom;
    }
    if (!family) {
        throw vkf::app::UsageError("--family is required (or --preset bloom-560m)");
    }
    const bool mpt = *family == vkf::ModelFamily::Mpt;
    if (!mpt && (options.bias || options.alibi_bias_max || options.clip_qkv)) {
        throw vkf::app::UsageError("--bias, --alibi-bias-max and --clip-qkv are MPT settings");
    }

    vkf::ModelConfig config{.family = *family};
    if (options.preset == "bloom-560m") {
        config.n_layer = 24;
        config.hidden = 1024;
        config.n_head = 16;
        config.vocab_size = 250880;
    } else if (options.preset == "tiny") {
        config.n_layer = 2;
        // Head size 32, the smallest vkf-run runs; MPT's slope order differs for
        // non-power-of-two head counts, so its preset has 6.
        config.hidden = mpt ? 192 : 64;
        config.n_head = mpt ? 6 : 2;
        config.vocab_size = 512;
    }
    config.n_layer = options.layers.value_or(config.n_layer);
    config.hidden = options.hidden.value_or(config.hidden);
    config.n_head = options.heads.value_or(config.n_head);
    config.vocab_size = options.vocab.value_or(config.vocab_size);
    if (config.n_layer == 0 || config.hidden == 0 || config.n_head == 0 || config.vocab_size == 0) {
        throw vkf::app::UsageError("without a preset, --layers, --hidden, --heads and --vocab are required");
    }
    if (config.hidden % config.n_head != 0) {
        throw vkf::app::UsageError(
            fmt::format("--hidden {} is not a multiple of --heads {}", config.hidden, config.n_head));
    }
    config.n_kv_head = config.n_head;
    config.head_dim = config.hidden / config.n_head;
    // Written anyway (the CPU references and other engines read any head size), but said,
    // so that nobody waits for a checkpoint vkf-run will refuse.
    try {
        vkf::check_head_dim(config.head_dim);
    } catch (const vkf::Error& e) {
        fmt::print(stderr,
                   "vkf-make-checkpoint: warning: --hidden {} / --heads {} gives {}: vkf-run will refuse this "
                   "checkpoint\n",
                   config.hidden, config.n_head, e.what());
    }
    config.ffn_hidden = options.ffn.value_or(4 * config.hidden);
    config.max_seq_len = options.max_seq_len.value_or(2048);
    if (mpt) {
        config.no_bias = !options.bias;
        config.alibi_bias_max = options.alibi_bias_max.value_or(8.0);
        config.clip_qkv = options.clip_qkv;
    }
    try {
        vkf::validate(config);
    } catch (const vkf::Error& e) {
        throw vkf::app::UsageError(e.what());
    }
    return config;
}

int run(const Options& options, const vkf::ModelConfig& config) {
    const auto start = std::chrono::steady_clock::now();
    const auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    fmt::print(stderr, "vkf-make-checkpoint: writing {} ({} layers, hidden {}, {} heads, vocab {}, ffn {}, {}) to {}\n",
               vkf::family_name(config.family), config.n_layer, config.hidden, config.n_head, config.vocab_size,
               config.ffn_hidden, vkf::dtype_name(options.dtype), options.out);
    // One line per tenth of the bytes: visible progress on big models, no flood on small.
    int reported_tenths = 0;
    std::uint64_t total_bytes = 0;
    const auto progress = [&](const vkf::CheckpointWriteProgress& p) {
        total_bytes = p.total_bytes;
        const int tenths = p.total_bytes == 0 ? 10 : static_cast<int>(p.bytes_done * 10 / p.total_bytes);
        if (tenths > reported_tenths) {
            reported_tenths = tenths;
            const double percent = p.total_bytes == 0
                                       ? 100.0
                                       : 100.0 * static_cast<double>(p.bytes_done) / static_cast<double>(p.total_bytes);
            fmt::print(stderr, "  {:3.0f}%  {}/{} tensors, {} of {}, {:.1f} s\n", percent, p.tensors_done,
                       p.tensor_count, vkf::size_text(p.bytes_done), vkf::size_text(p.total_bytes), elapsed());
        }
    };
    vkf::write_random_checkpoint(options.out, config, options.seed, options.dtype, options.shards, progress);
    fmt::print("{}: {} weights in {}, {:.1f} s\n", options.out, vkf::size_text(total_bytes),
               vkf::count_text(static_cast<std::uint64_t>(options.shards), "file"), elapsed());
    return vkf::app::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    if (vkf::app::names_encoder_family(argc, argv)) {
        return vkf::app::make_encoder_checkpoint_main(argc, argv);
    }
    vkf::app::CommandLine cli("vkf-make-checkpoint", kAbout);
    Options options;
    declare_options(cli, options);
    return vkf::app::run_app(cli, argc, argv, [&] { return run(options, build_config(options)); });
}
