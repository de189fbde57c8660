// Fuzzes a sharded checkpoint's index (open_checkpoint on a directory holding
// model.safetensors.index.json, host/io/safetensors.hpp): the input is the index; the
// directory also holds small valid shards, written once with the project's writer, that an
// index may name (two at the top, one in a subdirectory), so that mapping tensors to shards,
// the shard path checks and the lookups with and without the "transformer." prefix all run.
// Every tensor of an accepted checkpoint is looked up and read.

#include "host/io/safetensors.hpp"
#include "host/io/safetensors_writer.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace {

namespace fs = std::filesystem;

vkf::RawTensorSource tensor(std::string name, vkf::DType dtype, std::vector<std::size_t> shape) {
    return {.name = std::move(name), .dtype = dtype, .shape = std::move(shape), .bytes = [](std::span<std::byte> out) {
                for (std::size_t i = 0; i < out.size(); ++i) {
                    out[i] = static_cast<std::byte>(i * 37 + 11);
                }
            }};
}

// The directory with the shards, made once per process.
const fs::path& checkpoint_dir() {
    static const fs::path dir = [] {
        using vkf::DType;
        const fs::path d = vkf::fuzz::scratch_dir() / "checkpoint";
        fs::create_directories(d / "sub");
        const std::vector<vkf::RawTensorSource> first = {
            tensor("transformer.word_embeddings.weight", DType::F16, {4, 2}),
            tensor("transformer.h.0.bias", DType::F32, {3}), tensor("lm_head.weight", DType::BF16, {2, 2})};
        const std::vector<vkf::RawTensorSource> second = {tensor("h.1.weight", DType::U8, {5}),
                                                          tensor("transformer.ln_f.weight", DType::F16, {2})};
        const std::vector<vkf::RawTensorSource> nested = {tensor("scalar", DType::F32, {}),
                                                          tensor("empty", DType::F16, {0, 3})};
        vkf::write_safetensors_file(d / "model-00001-of-00002.safetensors", first, {});
        vkf::write_safetensors_file(d / "model-00002-of-00002.safetensors", second, {});
        vkf::write_safetensors_file(d / "sub" / "extra.safetensors", nested, {{"format", "pt"}});
        return d;
    }();
    return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vkf;
    const fs::path& dir = checkpoint_dir();
    fuzz::write_file(dir / "model.safetensors.index.json", fuzz::as_text(data, size));
    fuzz::run_parser([&] {
        const ShardedCheckpoint checkpoint = open_checkpoint(dir);
        fuzz::check(checkpoint.source() == dir, "source is the directory opened");
        std::uint64_t sum = 0;
        for (const std::string& name : checkpoint.tensor_names()) {
            const CheckpointTensor* t = checkpoint.find(name);
            fuzz::check(t != nullptr && t->info->name == name, "every listed name finds its tensor");
            fuzz::check(&checkpoint.at(name) == t, "at and find agree");
            const auto raw = checkpoint.read_raw(name);
            fuzz::check(raw.size() == t->info->byte_size(), "read_raw returns the tensor's bytes");
            for (const std::byte b : raw) {
                sum += static_cast<unsigned>(b);
            }
            if (is_supported_float(t->info->dtype)) {
                fuzz::check(checkpoint.read_as_f32(name).size() == t->info->element_count(),
                            "read_as_f32 returns every element");
            }
            // The other spelling finds a tensor too (this one, or one stored under that name).
            const std::string other = name.starts_with(kTransformerPrefix) ? name.substr(kTransformerPrefix.size())
                                                                           : std::string(kTransformerPrefix) + name;
            fuzz::check(checkpoint.find(other) != nullptr, "the other spelling of a name finds a tensor");
            sum += checkpoint.file_of(name).string().size();
        }
        fuzz::check(checkpoint.find("no.such.tensor") == nullptr, "an absent name finds nothing");
        fuzz::sink(sum);
    });
    return 0;
}
