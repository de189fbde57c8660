#pragma once
// Checkpoints whose matrices are stored block-quantized (docs/QUANTIZATION.md), as
// vkf-quantize writes them and vkf-run loads them without the original:
//   model.safetensors  "__metadata__": {"vkformer.quantization": "q4_0",
//                                       "vkformer.quantization_version": "1", "format": "pt"}
//                      every matrix (linear weights, the embedding and LM-head tables) as two
//                      tensors, NAME (U8 [rows, row bytes]: the values plane) and
//                      NAME.scales (F16 [rows, k / 32]); every other tensor (norms, biases) F16
//   config.json        copied from the original.
// Ordinary (fp32/fp16/bf16) checkpoints have no such metadata; both kinds are checked and
// read through the functions below.

#include "host/io/safetensors.hpp"
#include "host/io/safetensors_writer.hpp"
#include "host/quant/quant_format.hpp"
#include "host/spec/model_config.hpp"
#include "host/spec/model_tensors.hpp"

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vkf {

inline constexpr std::string_view kQuantFormatKey = "vkformer.quantization";
inline constexpr std::string_view kQuantVersionKey = "vkformer.quantization_version";
inline constexpr std::uint32_t kQuantFormatVersion = 1;
inline constexpr std::string_view kScalesSuffix = ".scales";
// A matrix stored in another format than the file's kQuantFormatKey names (a GGUF K-quant mix
// such as Q4_K_M) has its own metadata entry, this prefix followed by the tensor's name.
inline constexpr std::string_view kTensorQuantPrefix = "vkformer.quantization:";

// Whether a tensor of this role is quantized: the matrices a token's pass reads (linear
// weights, the embedding and LM-head tables), which are nearly all of a model's bytes.
// Norms and biases stay fp16.
bool quantized_role(TensorRole role);

// Device (and quantized-file) bytes of a model tensor stored in `format`: values plus scales
// for a quantized matrix, the elements in format.dense otherwise.
std::uint64_t tensor_bytes(const ExpectedTensor& tensor, WeightFormat format);

// The format named by a checkpoint's metadata; QuantFormat::None for an ordinary one.
// Throws vkf::Error naming the file for an unknown format or version, a format without a
// version, and shards that disagree.
QuantFormat checkpoint_quantization(const ShardedCheckpoint& checkpoint);

// The format the matrix `name` is stored in: its own entry (kTensorQuantPrefix) in the
// metadata of the file holding it, else `checkpoint_format` (checkpoint_quantization's answer).
// Throws vkf::Error naming the file and tensor for an entry that names no stored format.
QuantFormat tensor_quantization(const ShardedCheckpoint& checkpoint, std::string_view name,
                                QuantFormat checkpoint_format);

// check_checkpoint for both kinds: returns the checkpoint's format after checking that every
// tensor the config needs is present with the right dtype and shape (for a quantized
// checkpoint: values U8 [rows, quant_row_bytes], scales F16 [rows, k / 32], the rest F16,
// F32 or BF16). Throws one vkf::Error listing the problems, each naming file and tensor.
QuantFormat check_model_checkpoint(const ShardedCheckpoint& checkpoint, const ModelConfig& config);

// The planes of a quantized matrix in a checkpoint, as stored.
struct QuantizedTensorBytes {
    std::vector<std::byte> values;  // [rows, row bytes]
    std::vector<std::byte> scales;  // [rows, k / 32] little-endian fp16
};
QuantizedTensorBytes read_quantized(const ShardedCheckpoint& checkpoint, std::string_view name);

// A tensor's weights as fp32: converted from F32/F16/BF16, or dequantized exactly from a
// checkpoint of `format` when its role is quantized (in the tensor's own format,
// tensor_quantization).
std::vector<float> read_weights_f32(const ShardedCheckpoint& checkpoint, const ExpectedTensor& tensor,
                                    QuantFormat format);

// A whole matrix [rows, k] quantized row by row (quantize_row).
struct QuantizedMatrix {
    std::vector<std::uint8_t> values;
    std::vector<std::uint16_t> scales;
};
QuantizedMatrix quantize_matrix(QuantFormat format, std::span<const float> weights, std::uint64_t rows, std::uint64_t k,
                                std::string_view what);

// The exact fp32 weights of a quantized matrix [rows, k] (dequantize_row, row by row).
std::vector<float> dequantize_matrix(QuantFormat format, std::span<const std::uint8_t> values,
                                     std::span<const std::uint16_t> scales, std::uint64_t rows, std::uint64_t k);

// vkf-quantize: reads the ordinary checkpoint in model_dir (config.json + safetensors),
// quantizes its matrices to `format` and writes out_dir/model.safetensors and
// out_dir/config.json (and the tokenizer files when model_dir has them). Refuses an
// already quantized checkpoint, shapes whose k is not a multiple of 32, and norm or bias
// values that do not fit fp16, naming the tensor.
void write_quantized_checkpoint(const std::filesystem::path& model_dir, const std::filesystem::path& out_dir,
                                QuantFormat format, const CheckpointProgressCallback& progress = {});

}  // namespace vkf
