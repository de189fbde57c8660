// vkf-make-checkpoint: writes a seeded random-weight checkpoint of an ALiBi family in the
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
    "Writes a checkpoint of an ALiBi model family (BLOOM, MPT, Falcon-RW, Baichuan-13B,\n"
    "Baichuan2-13B, Jais; JinaBERT with --family jina-bert) with seeded random weights in\n"
    "exactly the Hugging Face format: the family's tensor names and shapes, DIR/config.json\n"
    "plus DIR/model.safetensors, or with --shards N, model-0000k-of-0000N.safetensors and\n"
    "model.safetensors.index.json. Tensors are written one at a time, so any size fits in\n"
    "bounded memory. Give --preset NAME, or --family with --layers, --hidden, --heads and\n"
    "--vocab.\n";

struct Options {
    std::string out;
    // --family: bloom, mpt, falcon, jais, baichuan, or baichuan2 (Baichuan with Baichuan2's
    // vocabulary, by which its NormHead is recognized).
    std::optional<std::string> family;
    std::optional<std::string> preset;
    std::optional<std::uint32_t> layers, hidden, heads, vocab, ffn, max_seq_len;
    vkf::DType dtype = vkf::DType::F16;
    int shards = 1;
    std::uint64_t seed = 1;
    bool bias = false;
    std::optional<double> alibi_bias_max;
    std::optional<double> clip_qkv;
    std::optional<std::uint32_t> kv_heads;
    bool qk_ln = false, no_alibi = false, learned_pos_emb = false, post_ln = false;
    std::optional<double> softmax_scale, logit_scale;
    std::optional<std::uint32_t> alibi_train_len;
    std::optional<double> alibi_factor;
};

// The Baichuan2 vocabulary, by which its NormHead is recognized (host/spec/families/baichuan.cpp).
constexpr std::uint32_t kBaichuan2Vocabulary = 125696;

void declare_options(CLI::App& cli, Options& o) {
    using namespace vkf::app;
    add_text(cli, "--out", "DIR", o.out, "where to write (created when needed)")->required();
    add_choice(cli, "--family", o.family,
               {{"bloom", "bloom"},
                {"mpt", "mpt"},
                {"falcon", "falcon"},
                {"baichuan", "baichuan"},
                {"baichuan2", "baichuan2"},
                {"jais", "jais"}},
               "the model family (implied by a preset); --family jina-bert writes an\n"
               "encoder (its options: --family jina-bert --help)");
    add_choice(cli, "--preset", o.preset, {{"bloom-560m", "bloom-560m"}, {"tiny", "tiny"}},
               "bloom-560m: BLOOM-560m's shape (24 layers, hidden 1024, 16 heads,\n"
               "vocab 250880; about 1 GiB in f16)\n"
               "tiny: 2 layers, head size 32, vocab 512 (Baichuan2: its own 125696);\n"
               "BLOOM and Baichuan2 2 heads, Falcon and Jais 3, Baichuan 5, MPT 6");
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
    add_integer(cli, "--kv-heads", "N", o.kv_heads, 1u, "grouped-query attention with N key/value heads")
        ->group(mpt_only);
    cli.add_flag("--qk-ln", o.qk_ln, "LayerNorms on queries and keys (attn_config.qk_ln)")->group(mpt_only);
    add_number(cli, "--softmax-scale", "S", o.softmax_scale, "the factor of q.k (default 1/sqrt(head size))", true)
        ->group(mpt_only);
    add_number(cli, "--logit-scale", "S", o.logit_scale, "multiply the logits by S", true)->group(mpt_only);
    cli.add_flag("--no-alibi", o.no_alibi, "attention without ALiBi (give --learned-pos-emb for positions)")
        ->group(mpt_only);
    cli.add_flag("--learned-pos-emb", o.learned_pos_emb, "learned position embeddings (wpe)")->group(mpt_only);
    cli.add_flag("--post-ln", o.post_ln, "apply_residual_connection_post_layernorm: residuals after the LayerNorm")
        ->group("BLOOM only");
    add_integer(cli, "--alibi-train-len", "N", o.alibi_train_len, 2u,
                "alibi_scaling {train_seq_len: N}: slopes shrink past N keys")
        ->group("Jais only");
    add_number(cli, "--alibi-factor", "F", o.alibi_factor, "alibi_scaling {factor: F} (F > 1)", true)
        ->group("Jais only");
}

// Head size 32 in every tiny preset (the smallest vkf-run ran before any even size did), and
// non-power-of-two head counts where the family's slope order differs for them.
struct TinyShape {
    std::uint32_t hidden, heads;
};
TinyShape tiny_shape(vkf::ModelFamily family) {
    switch (family) {
        case vkf::ModelFamily::Mpt:
            return {192, 6};
        case vkf::ModelFamily::Falcon:
        case vkf::ModelFamily::Jais:
            return {96, 3};
        case vkf::ModelFamily::Baichuan:
            return {160, 5};
        case vkf::ModelFamily::Bloom:
            break;
    }
    return {64, 2};
}

// The configuration the options describe: a preset's shape, the family's usual settings,
// then explicit flags on top.
vkf::ModelConfig build_config(const Options& options) {
    using vkf::ModelFamily;
    std::optional<ModelFamily> family;
    if (options.family) {
        const std::string& name = *options.family;
        family = name == "bloom"    ? ModelFamily::Bloom
                 : name == "mpt"    ? ModelFamily::Mpt
                 : name == "falcon" ? ModelFamily::Falcon
                 : name == "jais"   ? ModelFamily::Jais
                                    : ModelFamily::Baichuan;
    }
    const bool baichuan2 = options.family == "baichuan2";
    if (options.preset == "bloom-560m") {
        if (family && family != ModelFamily::Bloom) {
            throw vkf::app::UsageError(
                "--preset bloom-560m is a BLOOM shape; it cannot be combined with another --family");
        }
        family = ModelFamily::Bloom;
    }
    if (!family) {
        throw vkf::app::UsageError("--family is required (or --preset bloom-560m)");
    }
    const bool mpt = *family == ModelFamily::Mpt;
    if (!mpt && (options.bias || options.alibi_bias_max || options.clip_qkv || options.kv_heads || options.qk_ln ||
                 options.softmax_scale || options.logit_scale || options.no_alibi || options.learned_pos_emb)) {
        throw vkf::app::UsageError(
            "--bias, --alibi-bias-max, --clip-qkv, --kv-heads, --qk-ln, --softmax-scale, --logit-scale, --no-alibi "
            "and --learned-pos-emb are MPT settings");
    }
    if (options.post_ln && *family != ModelFamily::Bloom) {
        throw vkf::app::UsageError("--post-ln is a BLOOM setting");
    }
    if ((options.alibi_train_len || options.alibi_factor) && *family != ModelFamily::Jais) {
        throw vkf::app::UsageError("--alibi-train-len and --alibi-factor are Jais settings");
    }

    vkf::ModelConfig config{.family = *family};
    if (options.preset == "bloom-560m") {
        config.n_layer = 24;
        config.hidden = 1024;
        config.n_head = 16;
        config.vocab_size = 250880;
    } else if (options.preset == "tiny") {
        const TinyShape shape = tiny_shape(*family);
        config.n_layer = 2;
        config.hidden = baichuan2 ? 64 : shape.hidden;
        config.n_head = baichuan2 ? 2 : shape.heads;
        config.vocab_size = baichuan2 ? kBaichuan2Vocabulary : 512;
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
    if (baichuan2 && config.vocab_size != kBaichuan2Vocabulary) {
        throw vkf::app::UsageError(
            fmt::format("Baichuan2 is recognized by its vocabulary of {} (its NormHead); --vocab "
                        "{} would make a Baichuan 1 model",
                        kBaichuan2Vocabulary, config.vocab_size));
    }
    config.n_kv_head = options.kv_heads.value_or(config.n_head);
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
    switch (*family) {
        case ModelFamily::Mpt:
            config.no_bias = !options.bias;
            config.alibi_bias_max = options.alibi_bias_max.value_or(8.0);
            config.clip_qkv = options.clip_qkv;
            config.qk_ln = options.qk_ln;
            config.softmax_scale = options.softmax_scale;
            config.logit_scale = options.logit_scale;
            config.alibi = !options.no_alibi;
            config.learned_pos_emb = options.learned_pos_emb;
            break;
        case ModelFamily::Bloom:
            config.post_layernorm_residual = options.post_ln;
            break;
        case ModelFamily::Falcon:
            break;  // Falcon-RW: biases everywhere
        case ModelFamily::Baichuan:
            config.no_bias = true;
            config.layer_norm_epsilon = 1e-6;
            config.tie_word_embeddings = false;
            config.normalized_lm_head = config.vocab_size == kBaichuan2Vocabulary;
            break;
        case ModelFamily::Jais:
            // jais-13b's muP settings: q.k / head size, embeddings times 14.6, logits times
            // mup_output_alpha 2.22 * mup_width_scale 0.0625.
            config.softmax_scale = 1.0 / config.head_dim;
            config.embedding_scale = 14.6;
            config.logit_scale = 2.22 * 0.0625;
            config.alibi_train_seq_len = options.alibi_train_len;
            config.alibi_scaling_factor = options.alibi_factor.value_or(1.0);
            break;
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
