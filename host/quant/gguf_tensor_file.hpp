#pragma once
// A llama.cpp GGUF file read in place as a vkformer checkpoint's one tensor file: its tensors
// under the family's Hugging Face names (gguf_checkpoint.hpp maps them), read by offset from
// the GGUF file a bounded chunk at a time, so loading one costs host memory near one chunk,
// never a copy of the file.
//
// F32, F16 and BF16 tensors are presented as they are stored. GGUF's Q8_0 and Q4_0 blocks
// (an fp16 scale d, then 32 int8 values, or 16 bytes whose low nibbles are elements 0..15 and
// high nibbles 16..31, weight d * (q - 8)) hold exactly the numbers of vkformer's q8_0/q4_0
// (host/quant/quant_format.hpp) interleaved: a quantized matrix NAME is presented as
// vkformer's two planes, NAME (U8, the blocks' values one after the other) and NAME.scales
// (F16, the blocks' d), and the file's metadata names the format as a quantized checkpoint's
// does; the repacking is byte for byte, nothing is re-quantized. A K-quant matrix (Q2_K ..
// Q6_K) or a Q4_1, Q5_0 or Q5_1 one (host/quant/kquant_format.hpp) is presented as its
// blocks, NAME (U8 [rows, kquant_row_bytes]) alone, read in place by the kernels. Every
// other ggml type (Q8_1, IQ*, ...) is refused naming the tensor and the type, as is a file
// mixing quantized and float matrices. Matrices of several quantized types (llama-quantize's
// Q4_K_M, Q5_K_M) are each read in their own: the metadata names the type most matrices have,
// and each other matrix's own (kTensorQuantPrefix, host/quant/quantized_checkpoint.hpp).
//
// Where llama.cpp's converter reorders rows (BLOOM's fused QKV as [q | k | v]) or splits a
// tensor (Baichuan's W_pack as attn_q, attn_k, attn_v), the rows are read back in the family's
// order from each part.

#include "host/io/gguf.hpp"
#include "host/io/safetensors.hpp"
#include "host/io/tensor_file.hpp"
#include "host/spec/gguf_checkpoint.hpp"
#include "host/spec/model_config.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace vkf {

class GgufTensorFile final : public TensorFile {
public:
    // Throws vkf::Error naming the file and the tensor for a tensor the family does not have,
    // a type that is not read, or a shape that disagrees with `config` (model_config_from_gguf).
    GgufTensorFile(GgufFile file, const ModelConfig& config);
    // The same for llama.cpp's jina-bert-v2 (encoder_config_from_gguf).
    GgufTensorFile(GgufFile file, const EncoderConfig& config);

    const std::filesystem::path& path() const override { return file_.path(); }
    std::uint64_t file_size() const override { return file_.file_size(); }
    std::string label() const override { return file_.label(); }
    std::span<const TensorInfo> tensors() const override { return tensors_; }
    const std::map<std::string, std::string>& metadata() const override { return metadata_; }
    const TensorInfo* find(std::string_view name) const override;
    void read_raw_into(const TensorInfo& info, std::uint64_t offset, std::span<std::byte> out) const override;

    const GgufFile& gguf() const { return file_; }

    // How a presented tensor's bytes lie in the GGUF tensors: each logical row of row_bytes is
    // stored row s = `row_order[r]` (r when empty) of stored_row_bytes, row s - part_begin[p] of
    // sources[p] where part_begin[p] <= s < part_begin[p + 1], as blocks of block_bytes whose
    // bytes [field_offset, field_offset + field_bytes) are the row's next field_bytes.
    struct Layout {
        std::vector<const GgufTensorInfo*> sources;
        std::vector<std::uint64_t> part_begin;  // sources.size() + 1 stored row numbers
        std::uint64_t rows = 1, part_rows = 1;  // part_rows: the first source's (a transposed one's)
        std::uint64_t row_bytes = 0, stored_row_bytes = 0;
        std::uint32_t block_bytes = 1, field_offset = 0, field_bytes = 1;
        std::vector<std::uint32_t> row_order;
        // Presented [in, out] from a stored [out, in] (rows: in, part_rows: out), element by element.
        bool transposed = false;
    };

private:
    void build(const std::function<std::optional<GgufTensorName>(std::string_view)>& map, std::string_view architecture,
               const ModelConfig& config);
    // Presents the family's tensor `mapped` stored as `parts` (one, unless the converter split it).
    void present(const GgufTensorName& mapped, std::vector<const GgufTensorInfo*> parts, const ModelConfig& config);
    // Serves a transposed tensor from a copy of it turned whole, kept until another is read.
    void read_transposed(const TensorInfo& info, const Layout& layout, std::uint64_t offset,
                         std::span<std::byte> out) const;
    void add(std::string name, DType dtype, std::vector<std::size_t> shape, Layout layout);

    GgufFile file_;
    std::vector<TensorInfo> tensors_;
    std::vector<Layout> layouts_;  // parallel to tensors_
    std::unordered_map<std::string, std::size_t> index_;
    std::map<std::string, std::string> metadata_;
    const GgufTensorInfo* quantized_ = nullptr;                        // the first quantized matrix
    std::vector<std::pair<std::string, std::string>> matrix_formats_;  // presented name, format
    const GgufTensorInfo* dense_matrix_ = nullptr;                     // the first float matrix
    mutable std::mutex transposed_mutex_;
    mutable std::vector<std::byte> transposed_;
    mutable const TensorInfo* transposed_of_ = nullptr;
};

// A GGUF model already open: its configuration (model_config_from_gguf) and its tensors read
// in place. The checkpoint's source is the file's path.
struct GgufModelSource {
    ModelConfig config;
    ShardedCheckpoint checkpoint;
};
GgufModelSource open_gguf_model(GgufFile file);

// The checkpoint a model is loaded from: a GGUF file read in place (its configuration is
// read_model_config's of the same path), else what open_checkpoint opens.
ShardedCheckpoint open_model_checkpoint(const std::filesystem::path& path);
// The same for an encoder: a jina-bert-v2 GGUF file (read_encoder_config's of the same path).
ShardedCheckpoint open_encoder_checkpoint(const std::filesystem::path& path);

}  // namespace vkf
