// Quantized checkpoints (vkf-quantize's output) on the CPU: what is written is exactly the
// row-by-row quantization of the original, reads back bit-identical (planes and dequantized
// weights), and every malformed variant is refused naming the file and the tensor.

#include "host/io/safetensors.hpp"
#include "host/io/safetensors_writer.hpp"
#include "host/quant/quantized_checkpoint.hpp"
#include "host/spec/random_weights.hpp"
#include "host/util/endian.hpp"
#include "tests/support/small_models.hpp"
#include "tests/support/test_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

namespace vkf::test {
namespace {

namespace fs = std::filesystem;

std::vector<std::uint16_t> halves_of(std::span<const std::byte> bytes) {
    std::vector<std::uint16_t> out(bytes.size() / 2);
    for (std::size_t i = 0; i < out.size(); ++i) {
        out[i] = load_le<std::uint16_t>(bytes.data() + 2 * i);
    }
    return out;
}

// Rewrites dir/model.safetensors tensor by tensor, letting `edit` change a tensor's entry
// (shape, dtype, bytes) or the metadata.
void rewrite(const fs::path& dir, const std::function<void(RawTensorSource&)>& edit,
             std::map<std::string, std::string> metadata) {
    std::vector<RawTensorSource> sources;
    std::vector<std::vector<std::byte>> data;
    {
        const SafetensorsFile file = open_safetensors(dir / "model.safetensors");
        for (const TensorInfo& t : file.tensors()) {
            const auto raw = file.read_raw(t);
            data.emplace_back(raw.begin(), raw.end());
        }
        std::size_t i = 0;
        for (const TensorInfo& t : file.tensors()) {
            const std::vector<std::byte>* bytes = &data[i++];
            sources.push_back(RawTensorSource{
                .name = t.name, .dtype = t.dtype, .shape = t.shape, .bytes = [bytes](std::span<std::byte> out) {
                    std::memcpy(out.data(), bytes->data(), std::min(out.size(), bytes->size()));
                }});
            edit(sources.back());
        }
    }
    write_safetensors_file(dir / "model.safetensors", sources, metadata);
}

std::map<std::string, std::string> metadata_of(QuantFormat f, const std::string& version = "1") {
    return {{std::string(kQuantFormatKey), to_string(f)}, {std::string(kQuantVersionKey), version}};
}

class QuantizedCheckpoint : public ::testing::TestWithParam<QuantFormat> {
protected:
    void SetUp() override {
        write_random_checkpoint(original_.path(), config_, 5, DType::F16, 2);
        write_quantized_checkpoint(original_.path(), quantized_.path(), GetParam());
    }
    std::string refusal(const std::function<void()>& action) { return error_message(action); }

    ModelConfig config_ = small_mpt(false, std::nullopt);
    TempDir original_{"vkf_test_qckpt_f16"};
    TempDir quantized_{"vkf_test_qckpt_q"};
};

// On a full disk: an error naming the file, and no model.safetensors or temporary left.
TEST_P(QuantizedCheckpoint, AFullDiskLeavesNoPartialCheckpoint) {
    const TempDir out("vkf_test_qckpt_full");
    const std::string e =
        full_disk_error(100000, [&] { write_quantized_checkpoint(original_.path(), out.path(), GetParam()); });
    EXPECT_NE(e.find("model.safetensors': write failed"), std::string::npos) << e;
    EXPECT_TRUE(directory_listing(out.path()).empty());
}

TEST_P(QuantizedCheckpoint, HoldsExactlyTheRowByRowQuantizationOfTheOriginal) {
    const QuantFormat f = GetParam();
    const ShardedCheckpoint original = open_checkpoint(original_.path());
    const ShardedCheckpoint q = open_checkpoint(quantized_.path());
    EXPECT_EQ(check_model_checkpoint(original, config_), QuantFormat::None);
    EXPECT_EQ(check_model_checkpoint(q, config_), f);
    EXPECT_TRUE(fs::exists(quantized_.path() / "config.json"));
    std::size_t matrices = 0;
    for (const ExpectedTensor& e : expected_tensors(config_)) {
        const std::vector<float> source = original.read_as_f32(e.name);
        if (!quantized_role(e.role)) {
            EXPECT_EQ(q.tensor_info(e.name).dtype, DType::F16) << e.name;
            EXPECT_EQ(read_weights_f32(q, e, f), source) << e.name << " (F16 in, F16 out)";
            continue;
        }
        ++matrices;
        const QuantizedMatrix expected = quantize_matrix(f, source, e.shape[0], e.shape[1], e.name);
        const QuantizedTensorBytes stored = read_quantized(q, e.name);
        ASSERT_EQ(stored.values.size(), expected.values.size()) << e.name;
        EXPECT_EQ(std::memcmp(stored.values.data(), expected.values.data(), expected.values.size()), 0) << e.name;
        EXPECT_EQ(halves_of(stored.scales), expected.scales) << e.name;
        // Dequantized weights: exact, and close to the original (the format's own error).
        const std::vector<float> back = read_weights_f32(q, e, f);
        ASSERT_EQ(back.size(), source.size());
        double err = 0.0, norm = 0.0;
        for (std::size_t i = 0; i < back.size(); ++i) {
            err += (back[i] - source[i]) * double(back[i] - source[i]);
            norm += source[i] * double(source[i]);
        }
        EXPECT_LT(std::sqrt(err / norm), f == QuantFormat::Q8_0 ? 0.01 : 0.15) << e.name;
    }
    EXPECT_EQ(matrices, 2 * 4 + 1u) << "4 linear layers per block and the (tied) table";
}

TEST_P(QuantizedCheckpoint, UnknownVersionsAndFormatsAreRefused) {
    rewrite(
        quantized_.path(), [](RawTensorSource&) {}, metadata_of(GetParam(), "2"));
    std::string e = refusal([&] { checkpoint_quantization(open_checkpoint(quantized_.path())); });
    EXPECT_NE(e.find("version '2'"), std::string::npos) << e;
    EXPECT_NE(e.find("model.safetensors"), std::string::npos) << e;
    rewrite(quantized_.path(), [](RawTensorSource&) {},
            {{std::string(kQuantFormatKey), "q3_k"}, {std::string(kQuantVersionKey), "1"}});
    e = refusal([&] { checkpoint_quantization(open_checkpoint(quantized_.path())); });
    EXPECT_NE(e.find("unknown quantization format 'q3_k'"), std::string::npos) << e;
    rewrite(quantized_.path(), [](RawTensorSource&) {}, {{std::string(kQuantFormatKey), to_string(GetParam())}});
    e = refusal([&] { checkpoint_quantization(open_checkpoint(quantized_.path())); });
    EXPECT_NE(e.find("no vkformer.quantization_version"), std::string::npos) << e;
}

TEST_P(QuantizedCheckpoint, AWrongScaleCountIsRefusedNamingTheTensor) {
    rewrite(
        quantized_.path(),
        [](RawTensorSource& t) {
            if (t.name == "transformer.blocks.1.ffn.down_proj.weight.scales") {
                t.shape[1] -= 1;
            }
        },
        metadata_of(GetParam()));
    const std::string e = refusal([&] { check_model_checkpoint(open_checkpoint(quantized_.path()), config_); });
    EXPECT_NE(e.find("blocks.1.ffn.down_proj.weight.scales"), std::string::npos) << e;
    EXPECT_NE(e.find("model.safetensors"), std::string::npos) << e;
}

TEST_P(QuantizedCheckpoint, AValuesPlaneWhoseShapeDisagreesWithTheConfigIsRefused) {
    // As if a q8_0 plane were labelled q4_0 (or the reverse): twice or half the bytes per row.
    const QuantFormat other = GetParam() == QuantFormat::Q8_0 ? QuantFormat::Q4_0 : QuantFormat::Q8_0;
    rewrite(
        quantized_.path(),
        [&](RawTensorSource& t) {
            if (t.name == "transformer.blocks.0.attn.Wqkv.weight") {
                t.shape[1] = static_cast<std::size_t>(quant_row_bytes(other, config_.hidden));
            }
        },
        metadata_of(GetParam()));
    const std::string e = refusal([&] { check_model_checkpoint(open_checkpoint(quantized_.path()), config_); });
    EXPECT_NE(e.find("blocks.0.attn.Wqkv.weight"), std::string::npos) << e;
    EXPECT_NE(e.find("shape"), std::string::npos) << e;
}

TEST_P(QuantizedCheckpoint, ATruncatedFileIsRefusedNamingFileAndTensor) {
    const fs::path file = quantized_.path() / "model.safetensors";
    fs::resize_file(file, fs::file_size(file) - 100);
    const std::string e = refusal([&] { open_checkpoint(quantized_.path()); });
    EXPECT_NE(e.find("model.safetensors"), std::string::npos) << e;
    EXPECT_NE(e.find("transformer."), std::string::npos) << e << " (names the tensor that runs past the end)";
}

TEST_P(QuantizedCheckpoint, QuantizingTwiceAndRowsThatAreNotWholeBlocksAreRefused) {
    TempDir again("vkf_test_qckpt_again");
    std::string e = refusal([&] { write_quantized_checkpoint(quantized_.path(), again.path(), GetParam()); });
    EXPECT_NE(e.find("already quantized"), std::string::npos) << e;

    ModelConfig odd = config_;
    odd.hidden = 80;  // 2 heads of 40: rows of 80 weights are not whole blocks
    odd.n_head = odd.n_kv_head = 2;
    odd.head_dim = 40;
    odd.ffn_hidden = 320;
    TempDir odd_dir("vkf_test_qckpt_odd");
    write_random_checkpoint(odd_dir.path(), odd, 1, DType::F16, 1);
    e = refusal([&] { write_quantized_checkpoint(odd_dir.path(), again.path(), GetParam()); });
    EXPECT_NE(e.find("multiple of 32"), std::string::npos) << e;
    EXPECT_NE(e.find("wte.weight"), std::string::npos) << e;
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantizedCheckpoint, ::testing::Values(QuantFormat::Q8_0, QuantFormat::Q4_0),
                         [](const auto& p) { return std::string(to_string(p.param)); });

}  // namespace
}  // namespace vkf::test
