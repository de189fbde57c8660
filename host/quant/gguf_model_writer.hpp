#pragma once
// vkf-quantize --format gguf: a Hugging Face decoder checkpoint as one llama.cpp GGUF file, as
// llama.cpp's converter (convert_hf_to_gguf.py, conversion/bloom.py) writes it for the families
// vkformer's GGUF reader loads (BLOOM, MPT, Refact, Baichuan, Jais, as llama.cpp's `bloom`,
// `mpt`, `refact`, `baichuan`, `jais`):
//   general.architecture, general.type, general.name (the directory's name), general.file_type,
//   general.quantization_version; the architecture's hyperparameter keys (gguf_family_keys.hpp);
//   the tokenizer keys (gguf_vocab_writer.hpp); every tensor under llama.cpp's name, BLOOM's
//   fused QKV rows regrouped [q | k | v], Baichuan's W_pack and Refact's presented QKV split into
//   attn_q/k/v (Baichuan's q and k rows permuted), Jais' matrices transposed to [out, in] and its
//   embedding and LM head (written even when tied) multiplied by the muP scales; matrices (the linear weights, the
//   embedding and a separate LM head) in the chosen type, 1-D tensors (norms, biases) and MPT's learned position
//   embedding F32, as the converter keeps them.
// Q8_0 and Q4_0 matrices hold vkformer's q8_0 / q4_0 quantization (host/quant/quant_format.hpp:
// the same values and element order as ggml's block_q8_0 / block_q4_0, each block's fp16 scale
// written in front of its values), so vkf-run reads back exactly the weights that
// `vkf-run --weights q8_0` makes of the original. Every matrix is quantized (llama-quantize
// --pure's layout; its default Q4_0 mix makes the LM head Q6_K, a type vkformer does not write).
//
// Tensors are read, converted and written a band of rows at a time (gguf_writer.hpp).

#include "host/io/safetensors_writer.hpp"

#include <filesystem>
#include <optional>
#include <string_view>

namespace vkf {

// The tensor type of the matrices (gguf-py's --outtype f32/f16/q8_0, llama-quantize's Q4_0).
enum class GgufMatrixType { F32, F16, Q8_0, Q4_0 };
std::string_view to_string(GgufMatrixType type);

// Reads the ordinary (F32/F16/BF16) checkpoint in model_dir and writes out_file. Throws vkf::Error
// naming the problem: another family (Falcon-RW, by name), an already quantized
// checkpoint, a quantized matrix whose rows are not a multiple of 32, a norm or bias value that
// does not fit (F16 matrices: a weight that does not fit fp16), the tokenizer (see
// gguf_tokenizer_metadata), an unwritable output or a full disk.
void write_gguf_model(const std::filesystem::path& model_dir, const std::filesystem::path& out_file,
                      GgufMatrixType type, const CheckpointProgressCallback& progress = {});

}  // namespace vkf
