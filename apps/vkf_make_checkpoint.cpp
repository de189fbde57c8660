// vkf-make-checkpoint: writes a seeded random-weight checkpoint of an ALiBi family in the
// Hugging Face layout (config.json + model.safetensors, or shards and an index), for tests
// and demos where no real model can be downloaded. The loader cannot tell it from a real
// checkpoint of the same shape.

#include "apps/common/app_main.hpp"
#include "apps/common/encoder_checkpoint_cli.hpp"
#include "apps/common/options.hpp"
#include "base/error.hpp"
#include "base/format.hpp"
#include "host/io/safetensors.hpp"
#include "host/ops/attention.hpp"
#include "host/spec/family_spec.hpp"
#include "host/spec/model_config.hpp"
#include "host/spec/random_weights.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
    // --family: a CheckpointVariant's name in the family table (host/spec/family_spec.hpp).
    std::optional<std::string> family;
    std::optional<std::string> preset;
    std::optional<std::uint32_t> layers, hidden, heads, vocab, ffn, max_seq_len;
    vkf::DType dtype = vkf::DType::F16;
    int shards = 1;
    std::uint64_t seed = 1;
    vkf::CheckpointOptionValues family_options;  // the family-only options given
};

std::string shape_words(const vkf::CheckpointShape& shape) {
    return fmt::format("{} layers, hidden {}, {} heads,\nvocab {}", shape.n_layer, shape.hidden, shape.n_head,
                       shape.vocab_size);
}

// --preset's help, from the table: each named preset, then what tiny is for each --family.
std::string preset_help() {
    std::string help;
    for (const vkf::FamilySpec& spec : vkf::families()) {
        for (const vkf::CheckpointPreset& preset : spec.writer.presets) {
            help += fmt::format("{}: {}'s shape: {}{}\n", preset.name, spec.display_name, shape_words(preset.shape),
                                preset.note.empty() ? "" : fmt::format(" ({})", preset.note));
        }
    }
    const vkf::CheckpointShape& usual = vkf::families().front().writer.variants.front().tiny;
    help += fmt::format("tiny: {} layers, head size {}, vocab {}; heads:\n", usual.n_layer, usual.hidden / usual.n_head,
                        usual.vocab_size);
    std::string separator;
    for (const vkf::FamilySpec& spec : vkf::families()) {
        for (const vkf::CheckpointVariant& variant : spec.writer.variants) {
            help += fmt::format("{}{} {}", separator, variant.name, variant.tiny.n_head);
            if (variant.tiny.vocab_size != usual.vocab_size) {
                help += fmt::format(" (vocab {})", variant.tiny.vocab_size);
            }
            separator = ", ";
        }
    }
    return help;
}

// Each family's own options, in a group of its own ("MPT only"); an option that several
// families take is declared once.
void declare_family_options(CLI::App& cli, vkf::CheckpointOptionValues& values) {
    using Kind = vkf::CheckpointOption::Kind;
    std::vector<std::string_view> declared;
    for (const vkf::FamilySpec& spec : vkf::families()) {
        const std::string group = std::string(spec.display_name) + " only";
        for (const vkf::CheckpointOption& option : spec.writer.options) {
            if (std::find(declared.begin(), declared.end(), option.flag) != declared.end()) {
                continue;
            }
            declared.push_back(option.flag);
            const std::string flag(option.flag);
            const std::string help(option.help);
            CLI::Option* declared_option = nullptr;
            if (option.kind == Kind::Flag) {
                declared_option = cli.add_flag_callback(
                    flag, [&values, flag] { values.set(flag, 1.0); }, help);
            } else {
                const std::uint32_t min = option.min;
                const bool positive = option.kind == Kind::Positive;
                declared_option = vkf::app::add_parsed_option(
                    cli, flag, std::string(option.value_name), help,
                    [&values, flag, min, positive](const std::string& text) {
                        values.set(flag, positive ? vkf::app::parse_positive(flag, text)
                                                  : vkf::app::parse_integer<std::uint32_t>(flag, text, min));
                    });
            }
            declared_option->group(group);
        }
    }
}

void declare_options(CLI::App& cli, Options& o) {
    using namespace vkf::app;
    add_text(cli, "--out", "DIR", o.out, "where to write (created when needed)")->required();
    std::vector<std::pair<std::string, std::string>> family_names;
    std::vector<std::pair<std::string, std::string>> preset_names;
    for (const vkf::FamilySpec& spec : vkf::families()) {
        for (const vkf::CheckpointVariant& variant : spec.writer.variants) {
            family_names.emplace_back(variant.name, variant.name);
        }
        for (const vkf::CheckpointPreset& preset : spec.writer.presets) {
            preset_names.emplace_back(preset.name, preset.name);
        }
    }
    preset_names.emplace_back("tiny", "tiny");
    add_choice(cli, "--family", o.family, family_names,
               "the model family (implied by a preset); --family jina-bert writes an\n"
               "encoder (its options: --family jina-bert --help)");
    add_choice(cli, "--preset", o.preset, preset_names, preset_help());
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
    declare_family_options(cli, o.family_options);
}

// The family --family or --preset names.
vkf::CheckpointFamily chosen_family(const Options& options, const vkf::CheckpointFamilyPreset& preset) {
    vkf::CheckpointFamily family;
    if (options.family) {
        family = vkf::find_checkpoint_family(*options.family);  // add_choice took only the table's names
    }
    if (preset.spec != nullptr) {
        if (family.spec != nullptr && family.spec != preset.spec) {
            throw vkf::app::UsageError(
                fmt::format("--preset {} is a {} shape; it cannot be combined with another --family",
                            preset.preset->name, preset.spec->display_name));
        }
        if (family.spec == nullptr) {
            family = {.spec = preset.spec, .variant = &preset.spec->writer.variants.front()};
        }
    }
    if (family.spec == nullptr) {
        std::vector<std::string_view> presets;
        for (const vkf::FamilySpec& spec : vkf::families()) {
            for (const vkf::CheckpointPreset& named : spec.writer.presets) {
                presets.push_back(named.name);
            }
        }
        throw vkf::app::UsageError("--family is required (or --preset " + vkf::and_list(presets) + ")");
    }
    return family;
}

// Options of another family are refused, naming all of that family's options.
void refuse_other_families_options(const vkf::FamilySpec& chosen, const vkf::CheckpointOptionValues& given) {
    const auto takes = [&](std::string_view flag) {
        for (const vkf::CheckpointOption& option : chosen.writer.options) {
            if (option.flag == flag) {
                return true;
            }
        }
        return false;
    };
    for (const vkf::FamilySpec& other : vkf::families()) {
        std::vector<std::string_view> flags;
        bool refused = false;
        for (const vkf::CheckpointOption& option : other.writer.options) {
            flags.push_back(option.flag);
            refused = refused || (given.given(option.flag) && !takes(option.flag));
        }
        if (refused) {
            const bool one = flags.size() == 1;
            throw vkf::app::UsageError(fmt::format("{} {} {} setting{}", vkf::and_list(flags), one ? "is a" : "are",
                                                   other.display_name, one ? "" : "s"));
        }
    }
}

// The configuration the options describe: a preset's shape, the family's usual settings,
// then explicit flags on top.
vkf::ModelConfig build_config(const Options& options) {
    vkf::CheckpointFamilyPreset preset;
    if (options.preset && *options.preset != "tiny") {
        preset = vkf::find_checkpoint_preset(*options.preset);
    }
    const vkf::CheckpointFamily family = chosen_family(options, preset);
    const vkf::FamilySpec& spec = *family.spec;
    refuse_other_families_options(spec, options.family_options);

    vkf::ModelConfig config{.family = spec.family};
    vkf::CheckpointShape shape;
    if (preset.preset != nullptr) {
        shape = preset.preset->shape;
    } else if (options.preset == "tiny") {
        shape = family.variant->tiny;
    }
    config.n_layer = options.layers.value_or(shape.n_layer);
    config.hidden = options.hidden.value_or(shape.hidden);
    config.n_head = options.heads.value_or(shape.n_head);
    config.vocab_size = options.vocab.value_or(shape.vocab_size);
    if (config.n_layer == 0 || config.hidden == 0 || config.n_head == 0 || config.vocab_size == 0) {
        throw vkf::app::UsageError("without a preset, --layers, --hidden, --heads and --vocab are required");
    }
    if (config.hidden % config.n_head != 0) {
        throw vkf::app::UsageError(
            fmt::format("--hidden {} is not a multiple of --heads {}", config.hidden, config.n_head));
    }
    if (family.variant->check != nullptr) {
        try {
            family.variant->check(config);
        } catch (const vkf::Error& e) {
            throw vkf::app::UsageError(e.what());
        }
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
    try {
        if (spec.writer.configure != nullptr) {
            spec.writer.configure(config, options.family_options);
        }
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
