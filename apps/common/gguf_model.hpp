#pragma once
// --model naming a llama.cpp GGUF file: the file is converted (host/spec/gguf_checkpoint.hpp)
// into a checkpoint directory under the temporary directory, which the program then loads as
// any other and which is removed when the program ends. The conversion costs a copy of the
// weights on disk for the run's length (checked against the free space first); reading GGUF
// tensors in place is the next step of issue 44. Its tokenizer.json, when written, is the
// model directory's as for any checkpoint.

#include <filesystem>
#include <memory>

namespace vkf::app {

class GgufModelDirectory {
public:
    explicit GgufModelDirectory(const std::filesystem::path& gguf);
    GgufModelDirectory(const GgufModelDirectory&) = delete;
    GgufModelDirectory& operator=(const GgufModelDirectory&) = delete;
    ~GgufModelDirectory();

    const std::filesystem::path& dir() const { return dir_; }

private:
    std::filesystem::path dir_;
};

// The converted directory when `model` is a GGUF file, else nullptr (a checkpoint directory
// or anything else, left to the loader's own messages). Throws vkf::Error naming the file when
// it is a GGUF file vkformer cannot run.
std::unique_ptr<GgufModelDirectory> convert_if_gguf(const std::filesystem::path& model);

}  // namespace vkf::app
