// Writes tests/io/gguf_writer_sample.hpp's file with write_gguf_file, for gguf_write_compare.py:
//   gguf_write_sample OUT.gguf ALIGNMENT   (ALIGNMENT 0: no general.alignment key)

#include "tests/io/gguf_writer_sample.hpp"

#include <cstdio>
#include <exception>
#include <string>

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fputs("usage: gguf_write_sample OUT.gguf ALIGNMENT\n", stderr);
        return 2;
    }
    try {
        const vkf::test::GgufSample sample =
            vkf::test::gguf_writer_sample(static_cast<std::uint32_t>(std::stoul(argv[2])));
        vkf::write_gguf_file(argv[1], sample.metadata, sample.tensors);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gguf_write_sample: %s\n", e.what());
        return 1;
    }
    return 0;
}
