#pragma once
// A sequence's saved state (issue 42, item 3): the tokens whose keys are in the KV cache, the
// chunks they ran in (Jais' length-dependent ALiBi makes later K/V depend on them), and the
// K/V blocks themselves in the dtype the cache stores them (f32, f16, q8_0 or q4_0 rows with
// their scales), behind a header that says which model and cache wrote them. Loaded into a
// session of the same model and cache format, the sequence continues exactly where it was:
// the bytes are the ones the cache held, so later steps compute what they would have.
//
// No Vulkan (tests/fuzz/sequence_state.cpp fuzzes parse_state); Batch saves and restores
// (host/model/batch_state.cpp).
//
// The file, little-endian throughout (docs/FORMATS.md "Sequence state"):
//   header   magic "VKFSTATE", format version, header bytes, the StateFingerprint, token,
//            chunk-end and block counts, KV bytes
//   body     tokens (u32 each), chunk ends (u32 each), KV: per layer, K of every block in
//            the sequence's order, then V
//   trailer  CRC-32 (zlib's) of everything before it
// parse_state refuses, before anything is changed, what is not such a file, a newer format, a
// file shorter or longer than its header says, a checksum that does not match, and a state of
// another model or cache format (naming the field that differs).
// The sampler is not part of it: every generation seeds its own (host/sample/sampler.hpp), so
// between generations a session holds no generator state.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vkf {

inline constexpr std::uint32_t kSequenceStateVersion = 1;

// What a state's KV bytes mean: the model's shapes and weights and the cache's format. The
// tokenizer hash is the CRC-32 of the model's tokenizer.json (0 where there is none, as for
// a GGUF file): the ids mean nothing under another vocabulary.
struct StateFingerprint {
    std::uint32_t family = 0;  // ModelFamily
    std::uint32_t vocab_size = 0;
    std::uint32_t hidden = 0;
    std::uint32_t n_layer = 0;
    std::uint32_t n_head = 0;
    std::uint32_t n_kv_head = 0;
    std::uint32_t head_dim = 0;
    std::uint32_t ffn_hidden = 0;
    std::uint32_t weight_dtype = 0;  // WeightFormat::dense (DType)
    std::uint32_t weight_quant = 0;  // WeightFormat::quant (QuantFormat)
    std::uint32_t kv_dtype = 0;      // DType of a side that is not quantized
    std::uint32_t kv_k_quant = 0;    // QuantFormat
    std::uint32_t kv_v_quant = 0;
    std::uint32_t block_size = 0;
    std::uint32_t tokenizer_crc = 0;

    bool operator==(const StateFingerprint&) const = default;
};

// "" when equal, else one sentence per field that differs: "n_layer: the state has 2, this
// session 4".
std::string fingerprint_differences(const StateFingerprint& state, const StateFingerprint& session);

struct SequenceState {
    StateFingerprint model;
    std::vector<std::uint32_t> tokens;      // in the cache
    std::vector<std::uint32_t> chunk_ends;  // Scheduler::chunk_ends
    // Per layer: K of each of the sequence's ceil(tokens / block_size) blocks, then V.
    std::vector<std::byte> kv;
};

// Bytes of one block of K and of V of one layer, as the cache stores them.
std::uint64_t state_k_block_bytes(const StateFingerprint& f);
std::uint64_t state_v_block_bytes(const StateFingerprint& f);

// The state of its first `tokens` tokens (at most all): its chunks cut there, the KV of the
// blocks that hold them (rows past `tokens` in the last one are never read before rewritten).
SequenceState state_prefix(const SequenceState& state, std::uint32_t tokens);

// The serialized size of a state of these counts (what serialize_state returns).
std::uint64_t serialized_state_size(const StateFingerprint& f, std::size_t tokens, std::size_t chunk_ends);
std::vector<std::byte> serialize_state(const SequenceState& state);
// Throws vkf::Error for bytes that are not a whole, intact state of format version <=
// kSequenceStateVersion, or one whose fingerprint differs from `expected` (each message says
// which, and `what` names the source: "state file 'x'").
SequenceState parse_state(std::span<const std::byte> bytes, const StateFingerprint& expected, std::string_view what);

// The CRC-32 of a file's bytes (0 when it does not exist): the tokenizer hash.
std::uint32_t file_crc32(const std::string& path);

}  // namespace vkf
