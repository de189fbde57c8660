// vkf-quantize: writes a block-quantized copy (q8_0 or q4_0, docs/QUANTIZATION.md) of a
// decoder checkpoint (BLOOM, MPT, Falcon-RW, Baichuan, Jais), which vkf-run then loads
// directly (read a chunk at a time, no re-quantization, no fp16 original needed): what a phone ships.
// With --format gguf it writes the model as one llama.cpp GGUF file instead (BLOOM, MPT, Refact,
// Baichuan, Jais), as
// llama.cpp's converter would: a Hugging Face checkpoint becomes the one file other tools read.

#include "apps/common/app_main.hpp"
#include "apps/common/options.hpp"
#include "base/format.hpp"
#include "host/io/gguf.hpp"
#include "host/quant/gguf_model_writer.hpp"
#include "host/quant/quantized_checkpoint.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

namespace {

constexpr const char* kAbout =
    "Quantizes the matrices of a decoder checkpoint (BLOOM, MPT, Falcon-RW, Baichuan, Jais;\n"
    "DIR/config.json + safetensors, F32, F16 or BF16; single file or sharded) to q8_0 or q4_0 blocks and writes\n"
    "OUT/model.safetensors (values as U8 plus fp16 scales, the format named in the\n"
    "metadata) and OUT/config.json. Norms and biases are stored as F16. vkf-run loads the\n"
    "result directly. Tensors are quantized one at a time.\n"
    "\n"
    "--format gguf writes OUT as one llama.cpp GGUF file instead, as llama.cpp's converter\n"
    "writes it, for BLOOM, MPT, Refact, Baichuan and Jais (llama.cpp's 'bloom', 'mpt', 'refact',\n"
    "'baichuan', 'jais'; Falcon-RW is refused): its metadata keys, tensor names and split or\n"
    "permuted rows (Baichuan's W_pack, Refact's q/kv and gate_up), Jais' transposes and muP\n"
    "scales, tokenizer.ggml.* keys and chat template. --to f32, f16, q8_0 or q4_0 gives the\n"
    "matrices' type (ggml's F32, F16, Q8_0, Q4_0 blocks); norms, biases and learned positions\n"
    "are F32. Read a band of rows at a time. vkf-run, llama.cpp and others load it.\n";

enum class OutputFormat { Safetensors, Gguf };
enum class Target { F32, F16, Q8_0, Q4_0 };

struct Options {
    std::string model;
    std::string out;
    Target to = Target::Q4_0;
    std::optional<OutputFormat> format;
};

void declare_options(CLI::App& cli, Options& o) {
    using namespace vkf::app;
    add_text(cli, "--model", "DIR", o.model, "the checkpoint to quantize")->required();
    add_choice(cli, "--to", o.to,
               {{"f32", Target::F32}, {"f16", Target::F16}, {"q8_0", Target::Q8_0}, {"q4_0", Target::Q4_0}},
               "the block format (required; f32 and f16 only with --format gguf)")
        ->required();
    add_choice(cli, "--format", o.format, {{"safetensors", OutputFormat::Safetensors}, {"gguf", OutputFormat::Gguf}},
               "what to write: a vkformer checkpoint directory (safetensors, the default) or one GGUF file");
    add_text(cli, "--out", "DIR|FILE", o.out,
             "where to write: a directory (created when needed), with --format gguf a file")
        ->required();
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

// A progress line at each tenth of the bytes.
auto progress_printer(const std::chrono::steady_clock::time_point& start) {
    return [start, reported_tenths = 0](const vkf::CheckpointWriteProgress& p) mutable {
        const int tenths = p.total_bytes == 0 ? 10 : static_cast<int>(p.bytes_done * 10 / p.total_bytes);
        if (tenths > reported_tenths) {
            reported_tenths = tenths;
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            fmt::print(stderr, "  {:3d}%  {}/{} tensors, {} of {}, {:.1f} s\n", tenths * 10, p.tensors_done,
                       p.tensor_count, vkf::size_text(p.bytes_done), vkf::size_text(p.total_bytes), seconds);
        }
    };
}

int run_gguf(const Options& o, const std::chrono::steady_clock::time_point& start) {
    if (std::filesystem::is_directory(o.out)) {
        throw vkf::app::UsageError(fmt::format("--out '{}' is a directory; --format gguf writes a file", o.out));
    }
    const auto type = o.to == Target::F32    ? vkf::GgufMatrixType::F32
                      : o.to == Target::F16  ? vkf::GgufMatrixType::F16
                      : o.to == Target::Q8_0 ? vkf::GgufMatrixType::Q8_0
                                             : vkf::GgufMatrixType::Q4_0;
    fmt::print(stderr, "vkf-quantize: {} -> {} (GGUF, matrices {})\n", o.model, o.out, vkf::to_string(type));
    vkf::write_gguf_model(o.model, o.out, type, progress_printer(start));
    const std::filesystem::path source = std::filesystem::is_directory(o.model)
                                             ? std::filesystem::path(o.model)
                                             : std::filesystem::path(o.model).parent_path();
    const std::uintmax_t before = directory_bytes(source);
    std::error_code error;
    const std::uintmax_t after = std::filesystem::file_size(o.out, error);
    // Written to a stream (--out /dev/stdout, a pipe), the summary must not join the file's bytes.
    std::FILE* summary = std::filesystem::is_regular_file(o.out, error) ? stdout : stderr;
    fmt::print(summary, "{}: GGUF file ({}) of {} (the original: {}), {:.1f} s\n", o.out, vkf::to_string(type),
               error ? std::string("?") : vkf::size_text(after), vkf::size_text(before),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return vkf::app::kExitOk;
}

int run(const Options& o) {
    const auto start = std::chrono::steady_clock::now();
    if (vkf::looks_like_gguf(o.model)) {
        throw vkf::app::UsageError(fmt::format(
            "--model '{}' is a GGUF file; vkf-quantize reads a Hugging Face checkpoint directory", o.model));
    }
    const bool gguf_name = std::filesystem::path(o.out).extension() == ".gguf";
    if (!o.format && gguf_name) {
        throw vkf::app::UsageError(
            fmt::format("--out '{}' ends in .gguf: add --format gguf to write a GGUF file (without it, vkf-quantize "
                        "writes a checkpoint directory)",
                        o.out));
    }
    if (o.format == OutputFormat::Gguf) {
        return run_gguf(o, start);
    }
    if (o.to == Target::F32 || o.to == Target::F16) {
        throw vkf::app::UsageError("--to f32 and f16 need --format gguf (a vkformer checkpoint is q8_0 or q4_0)");
    }
    const vkf::QuantFormat to = o.to == Target::Q8_0 ? vkf::QuantFormat::Q8_0 : vkf::QuantFormat::Q4_0;
    if (std::filesystem::weakly_canonical(o.model) == std::filesystem::weakly_canonical(o.out)) {
        throw vkf::app::UsageError("--out must not be the --model directory");
    }
    const auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    fmt::print(stderr, "vkf-quantize: {} -> {} ({})\n", o.model, o.out, vkf::to_string(to));
    const auto progress = progress_printer(start);
    vkf::write_quantized_checkpoint(o.model, o.out, to, progress);
    const std::filesystem::path source = std::filesystem::is_directory(o.model)
                                             ? std::filesystem::path(o.model)
                                             : std::filesystem::path(o.model).parent_path();
    const std::uintmax_t before = directory_bytes(source);
    const std::uintmax_t after = directory_bytes(o.out);
    fmt::print("{}: {} checkpoint of {} (the original: {}, {:.2f}x smaller), {:.1f} s\n", o.out, vkf::to_string(to),
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
