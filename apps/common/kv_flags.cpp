#include "apps/common/kv_flags.hpp"

#include "apps/common/options.hpp"

#include <fmt/format.h>

namespace vkf::app {

std::string KvCacheFlags::name() const {
    const auto side = [&](QuantFormat q) { return q == QuantFormat::None ? to_string(dense) : to_string(q); };
    if (k_quant() == v_quant()) {
        return side(k_quant());
    }
    return fmt::format("k {} v {}", side(k_quant()), side(v_quant()));
}

void add_kv_flags(CLI::App& cli, KvCacheFlags& flags, const std::string& kv_description) {
    add_parsed_option(cli, "--kv", "f32|f16|q8_0|q4_0", kv_description, [&flags](const std::string& text) {
        const std::string word = parse_choice("--kv", text, {"f32", "f16", "q8_0", "q4_0"});
        const std::optional<QuantFormat> quant = parse_quant_format(word);
        flags.dense = word == "f32" ? DType::F32 : DType::F16;
        flags.both = quant.value_or(QuantFormat::None);
    });
    for (const auto& [name, side] : {std::pair{"--kv-k", &flags.k}, std::pair{"--kv-v", &flags.v}}) {
        add_parsed_option(
            cli, name, "f16|q8_0|q4_0",
            fmt::format("{} alone in the KV cache, over --kv's choice:\nf16, or quantized as q8_0 or q4_0 "
                        "(head sizes of 32n)",
                        std::string(name) == "--kv-k" ? "K" : "V"),
            [side, name](const std::string& text) {
                const std::string word = parse_choice(name, text, {"f16", "q8_0", "q4_0"});
                *side = parse_quant_format(word).value_or(QuantFormat::None);
            });
    }
}

}  // namespace vkf::app
