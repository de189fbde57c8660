// Fuzzes a GGUF file (open_gguf, host/io/gguf.hpp): the input is the whole file, read from a
// memfd. When the header is accepted, every tensor is read and what open_gguf promises is
// checked: tensors lie aligned inside the data section without sharing bytes, names and keys
// find their entries, byte sizes match the dimensions and the type's block. Then the file is
// opened as a model (open_gguf_model) and as an encoder (open_encoder_checkpoint), each tensor
// either presents is read, and tokenizer.ggml.* is translated (tokenizer_json_from_gguf).

#include "host/io/gguf.hpp"
#include "host/quant/gguf_tensor_file.hpp"
#include "host/spec/gguf_checkpoint.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vkf;
    static fuzz::MemFile file;
    file.set(fuzz::as_text(data, size));
    fuzz::run_parser([&] {
        const GgufFile gguf = open_gguf(file.path());
        fuzz::check(gguf.file_size() == size, "file_size is the file's size");
        fuzz::check(gguf.data_offset() <= size, "the data section starts inside the file");
        fuzz::check(gguf.version() == 2 || gguf.version() == 3, "only versions 2 and 3 are accepted");
        std::uint64_t sum = 0;
        for (const GgufKeyValue& kv : gguf.metadata()) {
            fuzz::check(gguf.find(kv.key) == &kv.value, "find returns the value of that key");
            if (kv.value.is_array()) {
                for (const GgufValue& element : kv.value.as_array()) {
                    fuzz::check(element.type == kv.value.element_type, "array elements have the array's type");
                    sum += element.type == GgufValueType::String ? element.as_string().size() : 1;
                }
            }
        }
        std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
        for (const GgufTensorInfo& info : gguf.tensors()) {
            fuzz::check(gguf.find_tensor(info.name) == &info, "find_tensor returns the tensor of that name");
            fuzz::check(info.offset % gguf.alignment() == 0, "tensor offsets are aligned");
            fuzz::check(info.dims.size() <= kGgufMaxDims, "at most 4 dimensions");
            const auto traits = ggml_type_traits(static_cast<std::uint32_t>(info.type));
            fuzz::check(traits.has_value(), "tensor types are known");
            if (info.byte_size != 0) {
                fuzz::check(info.element_count() / traits->block_size * traits->block_bytes == info.byte_size,
                            "byte size is elements / block x block bytes");
                ranges.emplace_back(info.offset, info.offset + info.byte_size);
            }
            const auto raw = gguf.read_raw(info);
            fuzz::check(raw.size() == info.byte_size, "read_raw returns the tensor's bytes");
            for (const std::byte b : raw) {
                sum += static_cast<unsigned>(b);
            }
        }
        std::sort(ranges.begin(), ranges.end());
        for (std::size_t i = 0; i < ranges.size(); ++i) {
            fuzz::check(gguf.data_offset() + ranges[i].second <= size, "tensors end inside the file");
            fuzz::check(i == 0 || ranges[i - 1].second <= ranges[i].first, "tensors share no bytes");
        }
        fuzz::sink(sum);
    });
    // As a model (host/quant/gguf_tensor_file.hpp): every presented tensor reads whole and in
    // two parts that together are the whole (rows regrouped, blocks split into planes).
    const auto read_every_tensor = [](const ShardedCheckpoint& checkpoint) {
        for (const auto& tensor_file : checkpoint.files()) {
            for (const TensorInfo& info : tensor_file->tensors()) {
                const std::vector<std::byte> whole = tensor_file->read_raw(info);
                fuzz::check(whole.size() == info.byte_size(), "read_raw returns the tensor's bytes");
                std::vector<std::byte> parts(whole.size());
                const std::size_t half = parts.size() / 2 + (parts.size() > 2 ? 1 : 0);
                tensor_file->read_raw_into(info, 0, std::span<std::byte>(parts.data(), half));
                tensor_file->read_raw_into(info, half, std::span<std::byte>(parts.data() + half, parts.size() - half));
                fuzz::check(parts == whole, "a tensor read in two parts is the tensor read whole");
            }
        }
    };
    fuzz::run_parser([&] { read_every_tensor(open_gguf_model(open_gguf(file.path())).checkpoint); });
    fuzz::run_parser([&] { read_every_tensor(open_encoder_checkpoint(file.path())); });
    fuzz::run_parser([&] { fuzz::sink(tokenizer_json_from_gguf(open_gguf(file.path())).value_or("").size()); });
    return 0;
}
