// Fuzzes .npy files (read_npy, host/io/npy.hpp), as vkf-attention reads its Q, K, V, slopes
// and lengths: the input is the whole file, read from a memfd. An accepted array must hold
// exactly shape x dtype bytes, convert to float32 when its dtype is a float, and write back
// (write_npy) to a file that reads back the same.

#include "host/io/npy.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vkf;
    static fuzz::MemFile file;
    file.set(fuzz::as_text(data, size));
    fuzz::run_parser([&] {
        const NpyArray array = read_npy(file.path());
        fuzz::check(array.data.size() == array.element_count() * element_size(array.dtype),
                    "the data holds shape x dtype bytes");
        if (array.dtype == DType::F32 || array.dtype == DType::F16) {
            fuzz::check(npy_as_float32(array).size() == array.element_count(), "npy_as_float32 converts every element");
        }
        const std::filesystem::path copy = fuzz::scratch_dir() / "copy.npy";
        write_npy(copy, array.dtype, array.shape, array.data);
        const NpyArray again = read_npy(copy);
        fuzz::check(again.dtype == array.dtype && again.shape == array.shape && again.data == array.data,
                    "write_npy writes what read_npy reads back");
    });
    return 0;
}
