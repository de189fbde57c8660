#pragma once
// The KV cache's storage on every program's command line: --kv f32|f16|q8_0|q4_0 (q8_0 and
// q4_0 quantize K and V both, keeping f16 for neither), --kv-k and --kv-v f16|q8_0|q4_0 for K
// or V alone over --kv's choice (docs/QUANTIZATION.md, "KV cache").

#include "host/quant/quant_format.hpp"
#include "host/util/dtype.hpp"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace vkf::app {

struct KvCacheFlags {
    DType dense = DType::F16;              // a side that is not quantized
    QuantFormat both = QuantFormat::None;  // --kv q8_0 / q4_0
    std::optional<QuantFormat> k, v;       // --kv-k, --kv-v (None: f16)
    QuantFormat k_quant() const { return k.value_or(both); }
    QuantFormat v_quant() const { return v.value_or(both); }
    // "f16", "f32", "q8_0", or "k q8_0 v q4_0" when K and V differ.
    std::string name() const;
    // The flags on a SessionOptions, BatchOptions, SessionSize or PerplexityOptions.
    template <class Options>
    Options& apply_to(Options& options) const {
        options.kv_dtype = dense;
        options.kv_k_quant = k_quant();
        options.kv_v_quant = v_quant();
        return options;
    }
};

// Declares --kv, --kv-k and --kv-v; `kv_description` says what --kv's default is.
void add_kv_flags(CLI::App& cli, KvCacheFlags& flags, const std::string& kv_description);

}  // namespace vkf::app
