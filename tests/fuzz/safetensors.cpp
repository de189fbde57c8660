// Fuzzes a safetensors file (open_safetensors, host/io/safetensors.hpp): the input is the
// whole file, mapped from a memfd as vkf-run maps model.safetensors. When the header is
// accepted, every tensor is read (raw bytes, and as float32 where the dtype allows), so the
// offsets it accepted are exercised, and what it promises is checked: the tensors tile the
// data section in order, names find their tensors, byte sizes match shape x dtype.

#include "host/io/safetensors.hpp"
#include "host/util/endian.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vkf;
    static fuzz::MemFile file;
    file.set(fuzz::as_text(data, size));
    fuzz::run_parser([&] {
        const SafetensorsFile st = open_safetensors(file.path());
        fuzz::check(st.file_size() == size, "file_size is the file's size");
        const std::uint64_t header = load_le<std::uint64_t>(reinterpret_cast<const std::byte*>(data));
        const std::uint64_t data_size = size - 8 - header;
        std::uint64_t covered = 0;
        unsigned sum = 0;
        for (const TensorInfo& info : st.tensors()) {
            fuzz::check(info.data_begin == covered, "tensors lie back to back in data-section order");
            fuzz::check(info.data_end >= info.data_begin, "a tensor ends after it begins");
            covered = info.data_end;
            fuzz::check(st.find(info.name) == &info, "find returns the tensor of that name");
            fuzz::check(info.element_count() * element_size(info.dtype) == info.byte_size(),
                        "byte size is shape x dtype");
            const auto raw = st.read_raw(info.name);
            fuzz::check(raw.size() == info.byte_size(), "read_raw returns the tensor's bytes");
            for (const std::byte b : raw) {
                sum += static_cast<unsigned>(b);  // touches every byte: a bad offset faults here
            }
            if (is_supported_float(info.dtype)) {
                const std::vector<float> values = st.read_as_f32(info);
                fuzz::check(values.size() == info.element_count(), "read_as_f32 returns every element");
            } else {
                fuzz::run_parser([&] { st.read_as_f32(info); });  // refused with a vkf::Error
            }
        }
        fuzz::check(covered == data_size, "the tensors cover the data section");
        for (const auto& [key, value] : st.metadata()) {
            sum += static_cast<unsigned>(key.size() + value.size());
        }
        fuzz::sink(sum);
    });
    return 0;
}
