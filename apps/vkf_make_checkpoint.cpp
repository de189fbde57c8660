// vkf-make-checkpoint: writes a seeded random-weight BLOOM or MPT checkpoint in the
// Hugging Face layout (config.json + model.safetensors, or shards and an index), for tests
// and demos where no real model can be downloaded. The loader cannot tell it from a real
// checkpoint of the same shape.

#include "apps/common/cli.hpp"
#include "host/spec/random_weights.hpp"
#include "host/spec/model_config.hpp"
#include "host/io/safetensors.hpp"
#include "runtime/error.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

namespace {

using vkf::cli::kExitFailure;
using vkf::cli::kExitUsage;
using vkf::cli::UsageError;

constexpr const char* kUsage =
    R"(usage: vkf-make-checkpoint --out DIR (--preset NAME | --family F --layers N --hidden H --heads N --vocab V) [options]

Writes a BLOOM or MPT checkpoint with seeded random weights in exactly the Hugging Face
format: DIR/config.json plus DIR/model.safetensors, or with --shards N,
model-0000k-of-0000N.safetensors and model.safetensors.index.json. Tensors are written
one at a time, so any size fits in bounded memory.

options:
  --out DIR            where to write (created when needed)
  --family bloom|mpt   the model family (implied by a preset)
  --preset NAME        bloom-560m: BLOOM-560m's shape (24 layers, hidden 1024, 16 heads,
                       vocab 250880; about 1.1 GB in f16)
                       tiny: 2 layers, hidden 64 and 4 heads (BLOOM) or hidden 96 and
                       6 heads (MPT), vocab 512
  --layers N           transformer blocks
  --hidden H           model width (BLOOM hidden_size, MPT d_model)
  --heads N            attention heads; must divide the width
  --vocab V            vocabulary size
  --ffn F              MLP width (default 4 * hidden; BLOOM requires exactly that)
  --max-seq-len N      maximum sequence length recorded in config.json (default 2048)
  --dtype f32|f16|bf16 weight storage type (default f16)
  --shards N           split the weights over N files (default 1)
  --seed S             random seed (default 1); the same seed gives the same weights in
                       every dtype and sharding
MPT only:
  --bias               give every linear layer and LayerNorm a bias (default: no_bias,
                       as mpt-7b)
  --alibi-bias-max B   ALiBi maximum bias (default 8)
  --clip-qkv C         clamp the QKV projection to [-C, C] (default: no clamp)
  -h, --help           show this help
)";

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
    bool help = false;
};

using vkf::cli::parse_integer;
using vkf::cli::parse_positive;

Options parse_options(int argc, char** argv) {
    Options options;
    vkf::cli::ArgReader a(argc, argv);
    while (a.next()) {
        const std::string_view name = a.name();
        auto value = [&] { return a.value(); };
        auto flag = [&] { a.flag(); };
        auto dimension = [&]() { return parse_integer<std::uint32_t>(name, value(), 1); };

        if (name == "--out") {
            options.out = value();
        } else if (name == "--family") {
            const std::string family = value();
            if (family == "bloom") {
                options.family = vkf::ModelFamily::Bloom;
            } else if (family == "mpt") {
                options.family = vkf::ModelFamily::Mpt;
            } else {
                throw UsageError{"--family is bloom or mpt, not '" + family + "'"};
            }
        } else if (name == "--preset") {
            options.preset = value();
            if (*options.preset != "bloom-560m" && *options.preset != "tiny") {
                throw UsageError{"--preset is bloom-560m or tiny, not '" + *options.preset + "'"};
            }
        } else if (name == "--layers") {
            options.layers = dimension();
        } else if (name == "--hidden") {
            options.hidden = dimension();
        } else if (name == "--heads") {
            options.heads = dimension();
        } else if (name == "--vocab") {
            options.vocab = dimension();
        } else if (name == "--ffn") {
            options.ffn = dimension();
        } else if (name == "--max-seq-len") {
            options.max_seq_len = dimension();
        } else if (name == "--dtype") {
            const std::string dtype = value();
            if (dtype == "f32") {
                options.dtype = vkf::DType::F32;
            } else if (dtype == "f16") {
                options.dtype = vkf::DType::F16;
            } else if (dtype == "bf16") {
                options.dtype = vkf::DType::BF16;
            } else {
                throw UsageError{"--dtype is f32, f16 or bf16, not '" + dtype + "'"};
            }
        } else if (name == "--shards") {
            options.shards = parse_integer<int>(name, value(), 1);
        } else if (name == "--seed") {
            options.seed = parse_integer<std::uint64_t>(name, value(), 0);
        } else if (name == "--bias") {
            flag();
            options.bias = true;
        } else if (name == "--alibi-bias-max") {
            options.alibi_bias_max = parse_positive(name, value());
        } else if (name == "--clip-qkv") {
            options.clip_qkv = parse_positive(name, value());
        } else if (name == "-h" || name == "--help") {
            flag();
            options.help = true;
        } else {
            a.unknown();
        }
    }
    return options;
}

// The configuration the options describe: a preset's shape, then explicit flags on top.
vkf::ModelConfig build_config(const Options& options) {
    if (options.out.empty()) {
        throw UsageError{"--out is required"};
    }
    std::optional<vkf::ModelFamily> family = options.family;
    if (options.preset == "bloom-560m") {
        if (family == vkf::ModelFamily::Mpt) {
            throw UsageError{"--preset bloom-560m is a BLOOM shape; it cannot be combined with --family mpt"};
        }
        family = vkf::ModelFamily::Bloom;
    }
    if (!family) {
        throw UsageError{"--family is required (or --preset bloom-560m)"};
    }
    const bool mpt = *family == vkf::ModelFamily::Mpt;
    if (!mpt && (options.bias || options.alibi_bias_max || options.clip_qkv)) {
        throw UsageError{"--bias, --alibi-bias-max and --clip-qkv are MPT settings"};
    }

    vkf::ModelConfig config{.family = *family};
    if (options.preset == "bloom-560m") {
        config.n_layer = 24;
        config.hidden = 1024;
        config.n_head = 16;
        config.vocab_size = 250880;
    } else if (options.preset == "tiny") {
        config.n_layer = 2;
        config.hidden = mpt ? 96 : 64;
        config.n_head = mpt ? 6 : 4;  // MPT's slope order differs for non-power-of-two counts
        config.vocab_size = 512;
    }
    config.n_layer = options.layers.value_or(config.n_layer);
    config.hidden = options.hidden.value_or(config.hidden);
    config.n_head = options.heads.value_or(config.n_head);
    config.vocab_size = options.vocab.value_or(config.vocab_size);
    if (config.n_layer == 0 || config.hidden == 0 || config.n_head == 0 || config.vocab_size == 0) {
        throw UsageError{"without a preset, --layers, --hidden, --heads and --vocab are required"};
    }
    if (config.hidden % config.n_head != 0) {
        throw UsageError{"--hidden " + std::to_string(config.hidden) + " is not a multiple of --heads " +
                         std::to_string(config.n_head)};
    }
    config.n_kv_head = config.n_head;
    config.head_dim = config.hidden / config.n_head;
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
        throw UsageError{e.what()};
    }
    return config;
}

std::string megabytes(std::uint64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
    return text;
}

int run(const Options& options, const vkf::ModelConfig& config) {
    const auto start = std::chrono::steady_clock::now();
    const auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    std::cerr << "vkf-make-checkpoint: writing " << vkf::family_name(config.family) << " (" << config.n_layer
              << " layers, hidden " << config.hidden << ", " << config.n_head << " heads, vocab " << config.vocab_size
              << ", ffn " << config.ffn_hidden << ", " << vkf::dtype_name(options.dtype) << ") to " << options.out
              << '\n';
    // One line per tenth of the bytes: visible progress on big models, no flood on small.
    int reported_tenths = 0;
    std::uint64_t total_bytes = 0;
    const auto progress = [&](const vkf::CheckpointWriteProgress& p) {
        total_bytes = p.total_bytes;
        const int tenths = p.total_bytes == 0 ? 10 : static_cast<int>(p.bytes_done * 10 / p.total_bytes);
        if (tenths > reported_tenths) {
            reported_tenths = tenths;
            char line[160];
            const double percent = p.total_bytes == 0
                                       ? 100.0
                                       : 100.0 * static_cast<double>(p.bytes_done) / static_cast<double>(p.total_bytes);
            std::snprintf(line, sizeof line, "  %3.0f%%  %zu/%zu tensors, %s of %s, %.1f s\n", percent, p.tensors_done,
                          p.tensor_count, megabytes(p.bytes_done).c_str(), megabytes(p.total_bytes).c_str(), elapsed());
            std::cerr << line;
        }
    };
    vkf::write_random_checkpoint(options.out, config, options.seed, options.dtype, options.shards, progress);
    char summary[200];
    std::snprintf(summary, sizeof summary, "%s: %s weights in %d file%s, %.1f s\n", options.out.c_str(),
                  megabytes(total_bytes).c_str(), options.shards, options.shards == 1 ? "" : "s", elapsed());
    std::cout << summary;
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Options options;
    vkf::ModelConfig config;
    try {
        options = parse_options(argc, argv);
        if (options.help) {
            std::cout << kUsage;
            return 0;
        }
        config = build_config(options);
    } catch (const UsageError& e) {
        std::cerr << "vkf-make-checkpoint: " << e.message << " (see --help)\n";
        return kExitUsage;
    }
    try {
        return run(options, config);
    } catch (const std::exception& e) {  // vkf::Error, or a filesystem failure
        std::cout.flush();
        std::cerr << "vkf-make-checkpoint: error: " << e.what() << '\n';
        return kExitFailure;
    }
}
