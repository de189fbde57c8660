#pragma once
// The names GGUF files use, defined once for the reader (gguf.hpp, host/spec/gguf_*.cpp) and the
// writer (gguf_writer.hpp): the magic, the general.* and tokenizer.* keys (gguf-py's
// constants.py Keys), the per-architecture hyperparameter keys as suffixes of "{arch}.", and
// gguf-py's TokenType and LlamaFileType numbers.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace vkf::gguf_key {

inline constexpr std::array<char, 4> kMagic = {'G', 'G', 'U', 'F'};
// The version written; 2 and 3 are read.
inline constexpr std::uint32_t kWrittenVersion = 3;
// ggml.h's GGML_QNT_VERSION, written as general.quantization_version.
inline constexpr std::uint32_t kQuantizationVersion = 2;

inline constexpr std::string_view kArchitecture = "general.architecture";
inline constexpr std::string_view kType = "general.type";
inline constexpr std::string_view kName = "general.name";
inline constexpr std::string_view kSizeLabel = "general.size_label";
inline constexpr std::string_view kAlignment = "general.alignment";
inline constexpr std::string_view kFileType = "general.file_type";
inline constexpr std::string_view kQuantizationVersionKey = "general.quantization_version";

// Suffixes of "{arch}.": arch_key("bloom", kEmbeddingLength) is "bloom.embedding_length".
inline constexpr std::string_view kContextLength = "context_length";
inline constexpr std::string_view kEmbeddingLength = "embedding_length";
inline constexpr std::string_view kFeedForwardLength = "feed_forward_length";
inline constexpr std::string_view kBlockCount = "block_count";
inline constexpr std::string_view kHeadCount = "attention.head_count";
inline constexpr std::string_view kHeadCountKv = "attention.head_count_kv";
inline constexpr std::string_view kLayerNormEpsilon = "attention.layer_norm_epsilon";
inline constexpr std::string_view kLayerNormRmsEpsilon = "attention.layer_norm_rms_epsilon";
inline constexpr std::string_view kTensorDataLayout = "tensor_data_layout";
inline constexpr std::string_view kRopeDimensionCount = "rope.dimension_count";
inline constexpr std::string_view kClampKqv = "attention.clamp_kqv";
inline constexpr std::string_view kMaxAlibiBias = "attention.max_alibi_bias";
inline std::string arch_key(std::string_view architecture, std::string_view suffix) {
    return fmt::format("{}.{}", architecture, suffix);
}

inline constexpr std::string_view kTokenizerModel = "tokenizer.ggml.model";
inline constexpr std::string_view kTokenizerPre = "tokenizer.ggml.pre";
inline constexpr std::string_view kTokens = "tokenizer.ggml.tokens";
inline constexpr std::string_view kTokenType = "tokenizer.ggml.token_type";
inline constexpr std::string_view kMerges = "tokenizer.ggml.merges";
inline constexpr std::string_view kNormalizerLowercase = "tokenizer.ggml.normalizer.lowercase";
inline constexpr std::string_view kNormalizerStripAccents = "tokenizer.ggml.normalizer.strip_accents";
inline constexpr std::string_view kChatTemplate = "tokenizer.chat_template";
// tokenizer.chat_template.{name} for each named template, listed in tokenizer.chat_templates.
inline constexpr std::string_view kChatTemplates = "tokenizer.chat_templates";
// Special tokens: "tokenizer.ggml.{kind}_token_id" and "tokenizer.ggml.add_{kind}_token"; gguf-py
// spells some kinds differently in the id key (unk -> unknown, sep -> seperator, pad -> padding).
inline std::string special_token_id_key(std::string_view kind) {
    const std::string_view spelled = kind == "unk"   ? "unknown"
                                     : kind == "sep" ? "seperator"
                                     : kind == "pad" ? "padding"
                                                     : kind;
    return fmt::format("tokenizer.ggml.{}_token_id", spelled);
}
inline std::string add_special_token_key(std::string_view kind) {
    return fmt::format("tokenizer.ggml.add_{}_token", kind);
}

// gguf-py's TokenType.
enum class TokenType : std::int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

// gguf-py's LlamaFileType (general.file_type) for the types vkformer writes.
enum class FileType : std::uint32_t { AllF32 = 0, MostlyF16 = 1, MostlyQ4_0 = 2, MostlyQ8_0 = 7 };

}  // namespace vkf::gguf_key
