// llama.cpp's tensor names (gguf-py's constants.py TENSOR_NAMES) as each family's Hugging Face
// names (host/spec/families), and the rows llama.cpp's converter moved, read back in order.

#include "host/spec/gguf_checkpoint.hpp"

#include <charconv>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "host/spec/family_spec.hpp"

namespace vkf {
namespace {

// What a llama.cpp tensor is in the family's names: one of FamilyTensorNames' members, or the
// LM head (empty), or one of `parts` row blocks of the fused QKV.
struct Role {
    std::string_view gguf;
    std::string_view FamilyTensorNames::*member = nullptr;
    std::uint32_t part = 0, parts = 1;
};

constexpr Role kWhole[] = {
    {"token_embd", &FamilyTensorNames::embedding},
    {"position_embd", &FamilyTensorNames::position_embedding},
    {"token_embd_norm", &FamilyTensorNames::embedding_norm},
    {"output_norm", &FamilyTensorNames::final_norm},
    {"output", nullptr},
};
constexpr Role kBlock[] = {
    {"attn_norm", &FamilyTensorNames::attn_norm},
    {"attn_qkv", &FamilyTensorNames::qkv},
    {"attn_q_norm", &FamilyTensorNames::q_norm},
    {"attn_k_norm", &FamilyTensorNames::k_norm},
    {"attn_output", &FamilyTensorNames::attn_out},
    {"ffn_norm", &FamilyTensorNames::mlp_norm},
    {"ffn_up", &FamilyTensorNames::up},
    {"ffn_gate", &FamilyTensorNames::gate},
    {"ffn_down", &FamilyTensorNames::down},
};
// conversion/baichuan.py splits W_pack into three tensors; conversion/refact.py writes attn.q
// and attn.kv as three (the loader's fused QKV is [q | k | v], one K/V head).
constexpr Role kSplitQkv[] = {
    {"attn_q", &FamilyTensorNames::qkv, 0, 3},
    {"attn_k", &FamilyTensorNames::qkv, 1, 3},
    {"attn_v", &FamilyTensorNames::qkv, 2, 3},
};

// "blk.7.attn_norm.bias" -> (7, "attn_norm", ".bias"); canonical numbers only: "blk.01" and
// "blk.1" must not both become layer 1.
struct BlockName {
    std::uint32_t layer = 0;
    std::string_view role, suffix;
};
std::optional<std::pair<std::string_view, std::string_view>> split_suffix(std::string_view name) {
    for (const std::string_view suffix : {".weight", ".bias"}) {
        if (name.ends_with(suffix)) {
            return std::pair{name.substr(0, name.size() - suffix.size()), suffix};
        }
    }
    return std::nullopt;
}
std::optional<BlockName> block_name(std::string_view name) {
    if (!name.starts_with("blk.")) {
        return std::nullopt;
    }
    std::string_view rest = name.substr(4);
    BlockName block;
    const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), block.layer);
    if (error != std::errc{} || end == rest.data() || end == rest.data() + rest.size() || *end != '.' ||
        std::string_view(rest.data(), static_cast<std::size_t>(end - rest.data())) != fmt::to_string(block.layer)) {
        return std::nullopt;
    }
    rest.remove_prefix(static_cast<std::size_t>(end - rest.data()) + 1);
    const auto split = split_suffix(rest);
    if (!split) {
        return std::nullopt;
    }
    block.role = split->first;
    block.suffix = split->second;
    return block;
}

// llama.cpp stores BLOOM's fused QKV rows as [q | k | v] (each [n_head, head_dim]); BLOOM's
// own order is [n_head, 3, head_dim]. Entry r is the stored row of BLOOM's row r.
std::vector<std::uint32_t> bloom_qkv_rows(const ModelConfig& config) {
    std::vector<std::uint32_t> order(3 * std::size_t{config.n_head} * config.head_dim);
    for (std::uint32_t part = 0; part < 3; ++part) {
        for (std::uint32_t head = 0; head < config.n_head; ++head) {
            for (std::uint32_t d = 0; d < config.head_dim; ++d) {
                order[(std::size_t{head} * 3 + part) * config.head_dim + d] =
                    (part * config.n_head + head) * config.head_dim + d;
            }
        }
    }
    return order;
}

// Baichuan's W_pack from llama.cpp's attn_q, attn_k, attn_v one after the other. The converter
// permuted the rows of q and k for rotary positions (_reverse_hf_permute: within each head, row
// j * head_dim / 2 + i went to 2 i + j); ALiBi's dot products do not see that order, but the
// model is read back as it was converted, bit for bit.
std::vector<std::uint32_t> baichuan_w_pack_rows(const ModelConfig& config) {
    const std::uint32_t dim = config.head_dim, half = dim / 2, h = config.hidden;
    std::vector<std::uint32_t> order(3 * std::size_t{h});
    for (std::uint32_t part = 0; part < 3; ++part) {
        for (std::uint32_t head = 0; head < config.n_head; ++head) {
            for (std::uint32_t r = 0; r < dim; ++r) {
                const std::uint32_t stored = part == 2 || dim % 2 != 0 ? r : 2 * (r % half) + r / half;
                order[std::size_t{part} * h + head * dim + r] = part * h + head * dim + stored;
            }
        }
    }
    return order;
}

std::optional<GgufTensorName> mapped(const ModelConfig& config, const Role& role, std::string_view layer_prefix,
                                     std::string_view suffix) {
    const FamilyTensorNames& names = family_spec(config.family).tensors;
    if (role.member == nullptr) {
        return suffix == ".weight" ? std::optional(GgufTensorName{.name = "lm_head.weight"}) : std::nullopt;
    }
    const std::string_view base = names.*role.member;
    if (base.empty()) {
        return std::nullopt;
    }
    GgufTensorName name{
        .name = fmt::format("{}{}{}", layer_prefix, base, suffix), .part = role.part, .parts = role.parts};
    const bool linear = role.member == &FamilyTensorNames::qkv || role.member == &FamilyTensorNames::attn_out ||
                        role.member == &FamilyTensorNames::up || role.member == &FamilyTensorNames::gate ||
                        role.member == &FamilyTensorNames::down;
    name.transposed = names.conv1d && linear && suffix == ".weight";
    if (role.member == &FamilyTensorNames::qkv) {
        const std::uint64_t rows = std::uint64_t{config.hidden} + 2 * std::uint64_t{config.n_kv_head} * config.head_dim;
        if (config.family == ModelFamily::Bloom) {
            name.row_order = &bloom_qkv_rows;
            name.rows = rows;
        } else if (config.family == ModelFamily::Baichuan) {
            name.row_order = &baichuan_w_pack_rows;
            name.rows = rows;
        } else if (config.family == ModelFamily::Refact) {
            const std::uint64_t kv_rows = std::uint64_t{config.n_kv_head} * config.head_dim;
            name.part_rows = {config.hidden, kv_rows, kv_rows};
        }
    }
    return name;
}

}  // namespace

std::optional<GgufTensorName> gguf_tensor_name(const ModelConfig& config, std::string_view gguf_name) {
    if (const std::optional<BlockName> block = block_name(gguf_name)) {
        if (block->layer >= config.n_layer) {
            return std::nullopt;
        }
        const std::string prefix = fmt::format("{}{}.", family_spec(config.family).tensors.layer_prefix, block->layer);
        for (const Role& role : kBlock) {
            if (role.gguf == block->role) {
                return mapped(config, role, prefix, block->suffix);
            }
        }
        if (config.family == ModelFamily::Baichuan || config.family == ModelFamily::Refact) {
            for (const Role& role : kSplitQkv) {
                if (role.gguf == block->role) {
                    return mapped(config, role, prefix, block->suffix);
                }
            }
        }
        return std::nullopt;
    }
    const auto split = split_suffix(gguf_name);
    if (!split) {
        return std::nullopt;
    }
    for (const Role& role : kWhole) {
        if (role.gguf == split->first) {
            return mapped(config, role, "", split->second);
        }
    }
    return std::nullopt;
}

std::string_view gguf_architecture_label(ModelFamily family) {
    return family_spec(family).display_name;
}

}  // namespace vkf
