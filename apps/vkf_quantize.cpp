// vkf-quantize: writes a block-quantized copy (q8_0 or q4_0, docs/QUANTIZATION.md) of a
// decoder checkpoint (BLOOM, MPT, Falcon-RW, Baichuan, Jais), which vkf-run then loads
// directly (read a chunk at a time, no re-quantization, no fp16 original needed): what a phone ships.

#include "apps/common/app_main.hpp"
#include "apps/common/options.hpp"
#include "base/format.hpp"
#include "host/quant/quantized_checkpoint.hpp"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <string>

namespace {

constexpr const char* kAbout =
    "Quantizes the matrices of a decoder checkpoint (BLOOM, MPT, Falcon-RW, Baichuan, Jais;\n"
    "DIR/config.json + safetensors, F32, F16 or BF16; single file or sharded) to q8_0 or q4_0 blocks and writes\n"
    "OUT/model.safetensors (values as U8 plus fp16 scales, the format named in the\n"
    "metadata) and OUT/config.json. Norms and biases are stored as F16. vkf-run loads the\n"
    "result directly. Tensors are quantized one at a time.\n";

struct Options {
    std::string model;
    std::string out;
    vkf::QuantFormat to = vkf::QuantFormat::Q4_0;
};

void declare_options(CLI::App& cli, Options& o) {
    using namespace vkf::app;
    add_text(cli, "--model", "DIR", o.model, "the checkpoint to quantize")->required();
    add_choice(cli, "--to", o.to, {{"q8_0", vkf::QuantFormat::Q8_0}, {"q4_0", vkf::QuantFormat::Q4_0}},
               "the block format (required)")
        ->required();
    add_text(cli, "--out", "DIR", o.out, "where to write (created when needed)")->required();
}

std::uintmax_t directory_bytes(const std::filesystem::path& dir) {
    std::uintmax_t total = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.is_regular_file() && entry.path().extension() == ".safetensors") {
            total += entry.file_size();
        }
    }
    return total;
}

int run(const Options& o) {
    if (std::filesystem::weakly_canonical(o.model) == std::filesystem::weakly_canonical(o.out)) {
        throw vkf::app::UsageError("--out must not be the --model directory");
    }
    const auto start = std::chrono::steady_clock::now();
    const auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    fmt::print(stderr, "vkf-quantize: {} -> {} ({})\n", o.model, o.out, vkf::to_string(o.to));
    int reported_tenths = 0;
    const auto progress = [&](const vkf::CheckpointWriteProgress& p) {
        const int tenths = p.total_bytes == 0 ? 10 : static_cast<int>(p.bytes_done * 10 / p.total_bytes);
        if (tenths > reported_tenths) {
            reported_tenths = tenths;
            fmt::print(stderr, "  {:3d}%  {}/{} tensors, {} of {}, {:.1f} s\n", tenths * 10, p.tensors_done,
                       p.tensor_count, vkf::size_text(p.bytes_done), vkf::size_text(p.total_bytes), elapsed());
        }
    };
    vkf::write_quantized_checkpoint(o.model, o.out, o.to, progress);
    const std::filesystem::path source = std::filesystem::is_directory(o.model)
                                             ? std::filesystem::path(o.model)
                                             : std::filesystem::path(o.model).parent_path();
    const std::uintmax_t before = directory_bytes(source);
    const std::uintmax_t after = directory_bytes(o.out);
    fmt::print("{}: {} checkpoint of {} (the original: {}, {:.2f}x smaller), {:.1f} s\n", o.out, vkf::to_string(o.to),
               vkf::size_text(after), vkf::size_text(before),
               after == 0 ? 0.0 : static_cast<double>(before) / static_cast<double>(after), elapsed());
    return vkf::app::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    vkf::app::CommandLine cli("vkf-quantize", kAbout);
    Options options;
    declare_options(cli, options);
    return vkf::app::run_app(cli, argc, argv, [&] { return run(options); });
}
