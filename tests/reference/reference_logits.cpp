// Run by tests/reference/model_numpy.py (the reference_model_numpy CTest) as a separate process:
// loads a checkpoint, runs reference::Model::forward over the given token ids and writes the
// logits [ids, vocab] as a float64 .npy, so that an independent NumPy implementation can
// compare them at double precision.
//
// usage: reference_logits MODEL_DIR OUT.npy [--f16-weights] [--threads N] ID...

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "host/io/safetensors.hpp"
#include "host/reference/model.hpp"
#include "host/spec/model_config.hpp"

namespace {

// host/io/npy.hpp has no float64; a version 1.0 header for '<f8' is written here.
void write_f64_npy(const std::string& path, std::size_t rows, std::size_t cols, const std::vector<double>& values) {
    std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                         std::to_string(cols) + "), }";
    const std::size_t unpadded = 10 + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header.push_back('\n');
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) {
        throw vkf::Error("cannot open '" + path + "' for writing");
    }
    const char magic[] = "\x93NUMPY\x01\x00";
    out.write(magic, 8);
    const auto length = static_cast<std::uint16_t>(header.size());
    const char length_bytes[2] = {static_cast<char>(length & 0xff), static_cast<char>(length >> 8)};
    out.write(length_bytes, 2);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    static_assert(sizeof(double) == 8);
    out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * 8));
    if (!out) {
        throw vkf::Error("write error on '" + path + "'");
    }
}

std::uint32_t parse_u32(std::string_view text) {
    std::uint32_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
        throw vkf::Error("not an unsigned integer: '" + std::string(text) + "'");
    }
    return value;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: reference_logits MODEL_DIR OUT.npy [--f16-weights] [--threads N] ID...\n");
        return 2;
    }
    try {
        vkf::reference::ModelOptions options;
        std::vector<std::uint32_t> ids;
        for (int i = 3; i < argc; ++i) {
            const std::string_view arg = argv[i];
            if (arg == "--f16-weights") {
                options.round_weights_to_f16 = true;
            } else if (arg == "--threads" && i + 1 < argc) {
                options.threads = parse_u32(argv[++i]);
            } else {
                ids.push_back(parse_u32(arg));
            }
        }
        const auto start = std::chrono::steady_clock::now();
        const auto seconds_since = [](std::chrono::steady_clock::time_point t) {
            return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
        };
        const vkf::ModelConfig config = vkf::read_model_config(argv[1]);
        const vkf::ShardedCheckpoint checkpoint = vkf::open_checkpoint(argv[1]);
        const vkf::reference::Model model(config, checkpoint, options);
        const double load_seconds = seconds_since(start);
        const auto forward_start = std::chrono::steady_clock::now();
        const std::vector<double> logits = model.forward(ids);
        std::fprintf(stderr, "reference_logits: %zu tokens, load %.2f s, forward %.2f s\n", ids.size(), load_seconds,
                     seconds_since(forward_start));
        write_f64_npy(argv[2], ids.size(), config.vocab_size, logits);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "reference_logits: error: %s\n", e.what());
        return 1;
    }
}
