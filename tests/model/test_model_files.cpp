// A model's files going bad under it (issue 16): a checkpoint truncated while its weights
// are being uploaded (it used to kill the process with SIGBUS through the memory mapping),
// and NaN or infinite weights (they used to surface only as non-finite logits at sampling
// time), in each storage format a load reads them in.

#include "host/model/model.hpp"
#include "host/spec/random_weights.hpp"
#include "tests/support/small_models.hpp"
#include "tests/support/vulkan_test.hpp"

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

namespace vkf::test {
namespace {

class ModelFiles : public VulkanTest {};

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

TEST_F(ModelFiles, ACheckpointTruncatedDuringTheLoadIsAnErrorNamingTheFile) {
    const TempDir dir("vkf_test_model_truncated");
    write_random_checkpoint(dir.path(), small_bloom(), 7, DType::F16);
    const std::filesystem::path file = dir.path() / "model.safetensors";
    bool truncated = false;
    ModelOptions options{.weights = WeightFormat{.dense = DType::F16}};
    options.progress = [&](const WeightUploadProgress& p) {
        if (!truncated && 3 * p.bytes_done > p.total_bytes) {  // a third of the way in
            std::filesystem::resize_file(file, std::filesystem::file_size(file) / 2);
            truncated = true;
        }
    };
    const std::string e = error_message([&] { const Model model(ctx(), dir.path(), options); });
    EXPECT_TRUE(truncated);
    EXPECT_TRUE(contains(e, "safetensors file '" + file.string() + "'")) << e;
    EXPECT_TRUE(contains(e, "it was truncated while being read")) << e;
    // The context survives for the next load.
    write_random_checkpoint(dir.path(), small_bloom(), 7, DType::F16);
    const Model model(ctx(), dir.path(), options);
    EXPECT_EQ(model.config().n_layer, small_bloom().n_layer);
}

// Overwrites element `index` of tensor `name` (an F32 or F16 tensor) with `value`.
void poison(const std::filesystem::path& file, const std::string& name, std::size_t index, float value) {
    const ShardedCheckpoint checkpoint = open_checkpoint(file);
    const TensorInfo& info = checkpoint.tensor_info(name);  // with or without "transformer."
    const std::uint64_t data_start =
        checkpoint.files()[0]->file_size() - checkpoint.files()[0]->tensors().back().data_end;
    std::fstream out(file, std::ios::in | std::ios::out | std::ios::binary);
    const std::size_t size = element_size(info.dtype);
    out.seekp(static_cast<std::streamoff>(data_start + info.data_begin + index * size));
    if (info.dtype == DType::F32) {
        out.write(reinterpret_cast<const char*>(&value), 4);
    } else {
        const std::uint16_t bits = std::isnan(value) ? 0x7e00 : 0x7c00;
        out.write(reinterpret_cast<const char*>(&bits), 2);
    }
}

TEST_F(ModelFiles, NonFiniteWeightsAreRefusedNamingTheTensorAndElement) {
    struct Case {
        DType stored;
        WeightFormat loaded;
        float value;
        const char* said;
    };
    const Case cases[] = {
        {DType::F32, WeightFormat{.dense = DType::F32}, std::numeric_limits<float>::quiet_NaN(), "is NaN"},
        {DType::F16, WeightFormat{.dense = DType::F16}, std::numeric_limits<float>::infinity(), "is infinite"},
        {DType::F16, WeightFormat{.dense = DType::F16, .quant = QuantFormat::Q8_0},
         std::numeric_limits<float>::quiet_NaN(), "is NaN"},
    };
    for (const Case& c : cases) {
        const TempDir dir("vkf_test_model_nan");
        write_random_checkpoint(dir.path(), small_bloom(), 7, c.stored);
        const std::string name = "h.1.mlp.dense_h_to_4h.weight";
        poison(dir.path() / "model.safetensors", name, 1234, c.value);
        const std::string e =
            error_message([&] { const Model model(ctx(), dir.path(), ModelOptions{.weights = c.loaded}); });
        EXPECT_TRUE(contains(e, name + "': element 1234 " + c.said)) << e;
        const auto load_unchecked = [&] {
            const Model unchecked(ctx(), dir.path(), ModelOptions{.weights = c.loaded, .check_finite_weights = false});
        };
        if (c.loaded.quant == QuantFormat::None) {
            load_unchecked();  // loads: the check is what refused it
        } else {
            // Quantization refuses non-finite weights on its own.
            const std::string q = error_message(load_unchecked);
            EXPECT_TRUE(contains(q, "only finite weights can be quantized")) << q;
        }
    }
}

}  // namespace
}  // namespace vkf::test
