#pragma once
// The sequence states the fuzz target parses (tests/fuzz/sequence_state.cpp) and the seeds
// make_seeds.cpp writes for it: a small model's fingerprint (one layer, one KV head of 32,
// blocks of 4 tokens) that both share, so that the fuzzer starts past the fingerprint check.

#include "host/model/sequence_state.hpp"
#include "host/quant/quant_format.hpp"
#include "host/util/dtype.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace vkf::fuzz {

inline StateFingerprint state_fingerprint(QuantFormat k = QuantFormat::None) {
    return StateFingerprint{.family = 0,
                            .vocab_size = 64,
                            .hidden = 32,
                            .n_layer = 1,
                            .n_head = 1,
                            .n_kv_head = 1,
                            .head_dim = 32,
                            .ffn_hidden = 128,
                            .weight_dtype = static_cast<std::uint32_t>(DType::F32),
                            .kv_dtype = static_cast<std::uint32_t>(DType::F16),
                            .kv_k_quant = static_cast<std::uint32_t>(k),
                            .block_size = 4,
                            .tokenizer_crc = 0x12345678};
}

// Calls put(name, bytes) for each seed: states of 5 tokens (f16 and q8_0 K) and of 1.
template <class Put>
void sequence_state_seeds(Put&& put) {
    const auto write = [&](const char* name, QuantFormat k, std::uint32_t tokens) {
        SequenceState state{.model = state_fingerprint(k), .tokens = {}, .chunk_ends = {}, .kv = {}};
        for (std::uint32_t t = 0; t < tokens; ++t) {
            state.tokens.push_back((t * 7 + 3) % 64);
        }
        state.chunk_ends = tokens > 1 ? std::vector<std::uint32_t>{tokens - 1, tokens} : std::vector<std::uint32_t>{1};
        const std::uint64_t blocks = (tokens + 3) / 4;
        state.kv.resize(blocks * (state_k_block_bytes(state.model) + state_v_block_bytes(state.model)));
        for (std::size_t i = 0; i < state.kv.size(); ++i) {
            state.kv[i] = static_cast<std::byte>(i * 31 + 7);
        }
        const std::vector<std::byte> bytes = serialize_state(state);
        put(name, std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    };
    write("f16-5.state", QuantFormat::None, 5);
    write("q8_0-5.state", QuantFormat::Q8_0, 5);
    write("f16-1.state", QuantFormat::None, 1);
}

}  // namespace vkf::fuzz
