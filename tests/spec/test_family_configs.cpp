// config.json of the families beyond BLOOM and MPT-7B, from files modelled on the real
// checkpoints' (tiiuae/falcon-rw-1b, baichuan-inc/Baichuan-13B-Base and Baichuan2-13B-Base,
// core42/jais-13b, mosaicml/mpt-30b with llm-foundry's grouped-query options): what each key
// becomes, every unsupported setting refused by name, the tensor names and stored shapes of
// each family, and config.json written back and read again.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "host/spec/model_config.hpp"
#include "host/spec/model_tensors.hpp"
#include "tests/support/test_support.hpp"

namespace {

using vkf::ModelConfig;
using vkf::ModelFamily;

constexpr std::string_view kFalconRw1b = R"({
  "alibi": true,
  "apply_residual_connection_post_layernorm": false,
  "architectures": ["FalconForCausalLM"],
  "attention_dropout": 0.0,
  "bias": true,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_dropout": 0.0,
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "layer_norm_epsilon": 1e-05,
  "model_type": "falcon",
  "multi_query": false,
  "new_decoder_architecture": false,
  "num_attention_heads": 32,
  "num_hidden_layers": 24,
  "parallel_attn": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.27.4",
  "use_cache": true,
  "vocab_size": 50304
})";

constexpr std::string_view kBaichuan13b = R"({
  "architectures": ["BaichuanForCausalLM"],
  "auto_map": {"AutoConfig": "configuration_baichuan.BaichuanConfig",
               "AutoModelForCausalLM": "modeling_baichuan.BaichuanForCausalLM"},
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 5120,
  "initializer_range": 0.02,
  "intermediate_size": 13696,
  "model_max_length": 4096,
  "model_type": "baichuan",
  "num_attention_heads": 40,
  "num_hidden_layers": 40,
  "pad_token_id": 0,
  "rms_norm_eps": 1e-06,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.29.2",
  "use_cache": true,
  "vocab_size": 64000
})";

constexpr std::string_view kJais13b = R"({
  "activation_function": "swiglu",
  "architectures": ["JAISLMHeadModel"],
  "attn_pdrop": 0.0,
  "bos_token_id": 0,
  "embd_pdrop": 0.0,
  "eos_token_id": 0,
  "initializer_range": 0.02,
  "layer_norm_epsilon": 1e-05,
  "model_type": "jais",
  "mup_embeddings_scale": 14.6,
  "mup_output_alpha": 2.22,
  "mup_scale_qk_dot_by_d": true,
  "mup_width_scale": 0.0625,
  "n_embd": 5120,
  "n_head": 40,
  "n_inner": 13653,
  "n_layer": 40,
  "n_positions": 2048,
  "pad_token_id": 0,
  "position_embedding_type": "alibi",
  "reorder_and_upcast_attn": false,
  "resid_pdrop": 0.0,
  "scale_attn_by_inverse_layer_idx": false,
  "scale_attn_weights": true,
  "torch_dtype": "float32",
  "use_cache": true,
  "vocab_size": 84992
})";

// smallcloudai/Refact-1_6B-fim's keys (its bos_token_id -1: none).
constexpr std::string_view kRefact16b = R"({
  "activation_function": "gelu",
  "architectures": ["GPTRefactForCausalLM"],
  "attention_bias_in_fp32": true,
  "attention_softmax_in_fp32": false,
  "bos_token_id": -1,
  "do_sample": true,
  "eos_token_id": 0,
  "initializer_range": 0.02,
  "layer_norm_epsilon": 1e-05,
  "model_type": "gpt_refact",
  "multi_query": true,
  "n_embd": 2048,
  "n_head": 32,
  "n_inner": null,
  "n_layer": 32,
  "n_positions": 4096,
  "scale_attention_softmax_in_fp32": true,
  "torch_dtype": "bfloat16",
  "use_cache": true,
  "vocab_size": 49216
})";

constexpr std::string_view kMpt30bGqa = R"({
  "architectures": ["MPTForCausalLM"],
  "attn_config": {"alibi": true, "alibi_bias_max": 8, "attn_impl": "torch", "attn_pdrop": 0,
                  "attn_type": "grouped_query_attention", "kv_n_heads": 8, "clip_qkv": 8,
                  "prefix_lm": false, "qk_ln": true, "softmax_scale": 0.125},
  "d_model": 7168,
  "expansion_ratio": 4,
  "learned_pos_emb": true,
  "logit_scale": "inv_sqrt_d_model",
  "max_seq_len": 8192,
  "model_type": "mpt",
  "n_heads": 64,
  "n_layers": 48,
  "no_bias": true,
  "vocab_size": 50432
})";

std::string replaced(std::string_view text, std::string_view from, std::string_view to) {
    std::string s(text);
    const std::size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << "fixture lacks " << from;
    if (at != std::string::npos) {
        s.replace(at, from.size(), to);
    }
    return s;
}

std::string error_of(const std::string& text) {
    return vkf::test::error_message([&] { (void)vkf::parse_model_config(text); });
}

TEST(FamilyConfigs, FalconRw1b) {
    const ModelConfig c = vkf::parse_model_config(kFalconRw1b);
    EXPECT_EQ(c.family, ModelFamily::Falcon);
    EXPECT_EQ(c.hidden, 2048u);
    EXPECT_EQ(c.n_head, 32u);
    EXPECT_EQ(c.head_dim, 64u);
    EXPECT_EQ(c.ffn_hidden, 8192u);
    EXPECT_FALSE(c.no_bias);
    EXPECT_EQ(c.max_seq_len, 2048u);
    EXPECT_TRUE(c.tie_word_embeddings);
    // Falcon's slopes are the paper's rounded to bfloat16: 2^(-h/4) loses bits.
    const std::vector<float> slopes = vkf::model_alibi_slopes(c);
    EXPECT_EQ(slopes[0], 0.83984375f);  // bf16(2^-0.25 = 0.8409)
    EXPECT_EQ(vkf::family_traits(c.family).alibi_form, vkf::AlibiForm::FalconBf16);
}

TEST(FamilyConfigs, Baichuan13bAndBaichuan2) {
    const ModelConfig c = vkf::parse_model_config(kBaichuan13b);
    EXPECT_EQ(c.family, ModelFamily::Baichuan);
    EXPECT_EQ(c.head_dim, 128u);
    EXPECT_EQ(c.ffn_hidden, 13696u);
    EXPECT_EQ(c.layer_norm_epsilon, 1e-6);
    EXPECT_EQ(c.max_seq_len, 4096u);
    EXPECT_TRUE(c.no_bias);
    EXPECT_FALSE(c.tie_word_embeddings);
    EXPECT_FALSE(c.normalized_lm_head);
    const ModelConfig c2 =
        vkf::parse_model_config(replaced(kBaichuan13b, R"("vocab_size": 64000)", R"("vocab_size": 125696)"));
    EXPECT_TRUE(c2.normalized_lm_head) << "Baichuan2's vocabulary means its NormHead";
}

TEST(FamilyConfigs, Jais13b) {
    const ModelConfig c = vkf::parse_model_config(kJais13b);
    EXPECT_EQ(c.family, ModelFamily::Jais);
    EXPECT_EQ(c.head_dim, 128u);
    EXPECT_EQ(c.ffn_hidden, 13653u);
    EXPECT_EQ(c.softmax_scale, 1.0 / 128);
    EXPECT_EQ(c.embedding_scale, 14.6);
    EXPECT_EQ(c.logit_scale, 2.22 * 0.0625);
    EXPECT_FALSE(c.alibi_train_seq_len);
    const ModelConfig dynamic = vkf::parse_model_config(
        replaced(kJais13b, R"("n_positions": 2048)",
                 R"("n_positions": 2048, "alibi_scaling": {"type": "linear", "train_seq_len": 2048})"));
    EXPECT_EQ(dynamic.alibi_train_seq_len, 2048u);
    const ModelConfig fixed =
        vkf::parse_model_config(replaced(kJais13b, R"("n_positions": 2048)",
                                         R"("n_positions": 2048, "alibi_scaling": {"type": "linear", "factor": 2.0})"));
    EXPECT_EQ(fixed.alibi_scaling_factor, 2.0);
    const ModelConfig unscaled = vkf::parse_model_config(
        replaced(kJais13b, R"("mup_scale_qk_dot_by_d": true)", R"("mup_scale_qk_dot_by_d": false)"));
    EXPECT_FALSE(unscaled.softmax_scale) << "1/sqrt(head_dim), the default";
}

TEST(FamilyConfigs, MptGroupedQueryWithEveryOption) {
    const ModelConfig c = vkf::parse_model_config(kMpt30bGqa);
    EXPECT_EQ(c.head_dim, 112u) << "MPT-30B's head size";
    EXPECT_EQ(c.n_kv_head, 8u);
    EXPECT_TRUE(c.qk_ln);
    EXPECT_EQ(c.softmax_scale, 0.125);
    EXPECT_EQ(c.clip_qkv, 8.0);
    EXPECT_EQ(c.logit_scale, 1.0 / std::sqrt(7168.0));
    EXPECT_FALSE(c.learned_pos_emb) << "with ALiBi, wpe only when the checkpoint holds it";
    const ModelConfig no_alibi = vkf::parse_model_config(replaced(kMpt30bGqa, R"("alibi": true)", R"("alibi": false)"));
    EXPECT_FALSE(no_alibi.alibi);
    EXPECT_TRUE(no_alibi.learned_pos_emb);
    const ModelConfig mqa = vkf::parse_model_config(
        replaced(kMpt30bGqa, R"("grouped_query_attention", "kv_n_heads": 8)", R"("multiquery_attention")"));
    EXPECT_EQ(mqa.n_kv_head, 1u);
}

// llm-foundry's sliding_window_size: -1 is full attention, W > 0 the key window.
TEST(FamilyConfigs, MptSlidingWindowIsRead) {
    EXPECT_EQ(vkf::parse_model_config(kMpt30bGqa).attention_window, 0u);
    const auto with = [](const std::string& value) {
        return replaced(kMpt30bGqa, R"("prefix_lm": false)", R"("prefix_lm": false, "sliding_window_size": )" + value);
    };
    EXPECT_EQ(vkf::parse_model_config(with("-1")).attention_window, 0u);
    EXPECT_EQ(vkf::parse_model_config(with("512")).attention_window, 512u);
    EXPECT_EQ(vkf::parse_model_config(with("1")).attention_window, 1u);
    const std::pair<std::string, std::string> refused[] = {
        {with("0"), "attn_config.sliding_window_size: 0 (each token attending only to itself) is not supported"},
        {with("-2"), "attn_config.sliding_window_size: must be -1 (no window) or a positive number"},
        {with("4294967296"), "attn_config.sliding_window_size: is too large"},
        {with("1.5"), "attn_config.sliding_window_size"},
        {with("\"512\""), "attn_config.sliding_window_size"},
    };
    for (const auto& [text, expected] : refused) {
        const std::string message = error_of(text);
        EXPECT_NE(message.find(expected), std::string::npos) << "expected: " << expected << "\nmessage: " << message;
    }
}

TEST(FamilyConfigs, Refact16b) {
    const ModelConfig c = vkf::parse_model_config(kRefact16b);
    EXPECT_EQ(c.family, ModelFamily::Refact);
    EXPECT_EQ(c.n_head, 32u);
    EXPECT_EQ(c.n_kv_head, 1u) << "multi-query";
    EXPECT_EQ(c.head_dim, 64u);
    EXPECT_EQ(c.ffn_hidden, 5632u) << "2/3 of 4 x 2048 = 5461, rounded up to a multiple of 256";
    EXPECT_EQ(c.max_seq_len, 4096u);
    EXPECT_EQ(c.layer_norm_epsilon, 1e-5);
    EXPECT_TRUE(c.no_bias);
    EXPECT_FALSE(c.tie_word_embeddings);
    EXPECT_FALSE(c.bos_token_id) << "-1: none";
    EXPECT_EQ(c.eos_token_ids, (std::vector<std::uint32_t>{0}));
    EXPECT_EQ(vkf::family_traits(c.family).norm, vkf::NormKind::RmsNorm);
    EXPECT_EQ(vkf::family_traits(c.family).mlp, vkf::MlpKind::Gated);
    ModelConfig one = c;
    one.n_layer = 1;
    const auto tensors = vkf::expected_tensors(one);
    EXPECT_EQ(tensors[2].name, "h.0.attn.qkv.weight");
    EXPECT_EQ(tensors[2].shape, (std::vector<std::size_t>{2048 + 2 * 64, 2048}));
    ModelConfig wide = c;
    wide.ffn_hidden = 4 * 2048;
    EXPECT_NE(vkf::test::error_message([&] {
                  vkf::validate(wide);
              }).find("Refact's MLP width is fixed by n_embd 2048 (5632), not 8192"),
              std::string::npos);
}

TEST(FamilyConfigs, UnsupportedSettingsAreRefusedByName) {
    const std::pair<std::string, std::string> cases[] = {
        {replaced(kFalconRw1b, R"("alibi": true)", R"("alibi": false)"),
         "config.json: alibi: Falcon with rotary positions"},
        {replaced(kFalconRw1b, R"("alibi": true,)", ""), "config.json: Falcon with rotary positions"},
        {replaced(kFalconRw1b, R"("multi_query": false)", R"("multi_query": true)"), "config.json: multi_query:"},
        {replaced(kFalconRw1b, R"("parallel_attn": false)", R"("parallel_attn": true)"), "config.json: parallel_attn:"},
        {replaced(kFalconRw1b, R"("new_decoder_architecture": false)", R"("new_decoder_architecture": true)"),
         "config.json: new_decoder_architecture:"},
        {replaced(kFalconRw1b, R"("bias": true)", R"("bias": true, "activation": "relu")"),
         "config.json: activation: 'relu' is not supported"},
        {replaced(kBaichuan13b, R"("model_max_length": 4096)", R"("max_position_embeddings": 4096)"),
         "config.json: max_position_embeddings: Baichuan models with max_position_embeddings are the 7B ones"},
        {replaced(kBaichuan13b, R"("hidden_act": "silu")", R"("hidden_act": "gelu")"),
         "config.json: hidden_act: 'gelu' is not supported"},
        {replaced(replaced(kBaichuan13b, R"("vocab_size": 64000)", R"("vocab_size": 125696)"),
                  R"("tie_word_embeddings": false)", R"("tie_word_embeddings": true)"),
         "config.json: tie_word_embeddings: Baichuan2's normalized LM head"},
        {replaced(kJais13b, R"("position_embedding_type": "alibi")", R"("position_embedding_type": "learned")"),
         "config.json: position_embedding_type: 'learned' is not supported"},
        {replaced(kJais13b, R"("activation_function": "swiglu")", R"("activation_function": "gelu_new")"),
         "config.json: activation_function: 'gelu_new' is not supported"},
        {replaced(kJais13b, R"("scale_attn_by_inverse_layer_idx": false)",
                  R"("scale_attn_by_inverse_layer_idx": true)"),
         "config.json: scale_attn_by_inverse_layer_idx: per-layer attention scaling"},
        {replaced(kJais13b, R"("n_positions": 2048)",
                  R"("n_positions": 2048, "alibi_scaling": {"type": "dynamic", "factor": 2})"),
         "config.json: alibi_scaling.type: 'dynamic' is not supported"},
        {replaced(kJais13b, R"("n_positions": 2048)",
                  R"("n_positions": 2048, "alibi_scaling": {"type": "linear", "factor": 0.5})"),
         "config.json: alibi_scaling.factor: must be a number > 1"},
        {replaced(kJais13b, R"("n_positions": 2048)", R"("n_positions": 2048, "alibi_scaling": {"type": "linear"})"),
         "config.json: alibi_scaling: needs exactly one of 'factor' and 'train_seq_len'"},
        {replaced(kMpt30bGqa, R"("qk_ln": true)", R"("qk_ln": true, "qk_gn": true)"), "attn_config.qk_gn:"},
        {replaced(kMpt30bGqa, R"("kv_n_heads": 8)", R"("kv_n_heads": 7)"),
         "attn_config.kv_n_heads: n_heads 64 is not a multiple of kv_n_heads 7"},
        {replaced(kMpt30bGqa, R"("prefix_lm": false)", R"("prefix_lm": false, "fused_qkv": false)"),
         "attn_config.fused_qkv: separate Wq, Wk and Wv"},
        {replaced(kMpt30bGqa, R"("logit_scale": "inv_sqrt_d_model")", R"("logit_scale": 0)"),
         "config.json: logit_scale: must be a finite, non-zero number"},
        {replaced(kRefact16b, R"("multi_query": true)", R"("multi_query": false)"),
         "config.json: multi_query: Refact's attention is multi-query"},
    };
    for (const auto& [text, expected] : cases) {
        const std::string message = error_of(text);
        EXPECT_NE(message.find(expected), std::string::npos) << "expected: " << expected << "\nmessage: " << message;
    }
}

// Each family's tensor names, as its checkpoints spell them, and the shapes as stored.
TEST(FamilyConfigs, TensorNamesAndStoredShapes) {
    ModelConfig jais = vkf::parse_model_config(kJais13b);
    jais.n_layer = 1;
    const auto tensors = vkf::expected_tensors(jais);
    const auto find = [&](const std::vector<vkf::ExpectedTensor>& list, const std::string& name) {
        for (const auto& t : list) {
            if (t.name == name) {
                return t;
            }
        }
        ADD_FAILURE() << name << " is not listed";
        return vkf::ExpectedTensor{};
    };
    const vkf::ExpectedTensor c_attn = find(tensors, "h.0.attn.c_attn.weight");
    EXPECT_TRUE(c_attn.transposed) << "GPT-2's Conv1D stores [in, out]";
    EXPECT_EQ(c_attn.shape, (std::vector<std::size_t>{3 * 5120, 5120}));
    EXPECT_EQ(c_attn.stored_shape(), (std::vector<std::size_t>{5120, 3 * 5120}));
    EXPECT_EQ(find(tensors, "h.0.mlp.c_fc2.weight").slot, vkf::TensorSlot::Gate);
    EXPECT_EQ(find(tensors, "h.0.mlp.c_proj.weight").stored_shape(), (std::vector<std::size_t>{13653, 5120}));

    ModelConfig baichuan = vkf::parse_model_config(kBaichuan13b);
    baichuan.n_layer = 1;
    const auto b = vkf::expected_tensors(baichuan);
    EXPECT_EQ(b.front().name, "model.embed_tokens.weight");
    EXPECT_EQ(find(b, "model.layers.0.self_attn.W_pack.weight").shape, (std::vector<std::size_t>{3 * 5120, 5120}));
    EXPECT_EQ(find(b, "model.layers.0.mlp.gate_proj.weight").slot, vkf::TensorSlot::Gate);
    EXPECT_EQ(find(b, "model.norm.weight").slot, vkf::TensorSlot::FinalNorm);
    EXPECT_EQ(b.back().name, "lm_head.weight");
    EXPECT_EQ(vkf::checkpoint_tensor_name("model.norm.weight"), "model.norm.weight") << "no transformer. prefix";

    ModelConfig mpt = vkf::parse_model_config(kMpt30bGqa);
    mpt.n_layer = 1;
    const auto m = vkf::expected_tensors(mpt);
    EXPECT_EQ(find(m, "blocks.0.attn.Wqkv.weight").shape, (std::vector<std::size_t>{7168 + 2 * 8 * 112, 7168}));
    EXPECT_EQ(find(m, "blocks.0.attn.k_ln.weight").shape, (std::vector<std::size_t>{8 * 112}));

    ModelConfig falcon = vkf::parse_model_config(kFalconRw1b);
    falcon.n_layer = 1;
    const auto f = vkf::expected_tensors(falcon);
    EXPECT_EQ(f.front().name, "word_embeddings.weight");
    EXPECT_EQ(find(f, "h.0.self_attention.query_key_value.bias").shape, (std::vector<std::size_t>{3 * 2048}));
}

TEST(FamilyConfigs, WrittenConfigsReadBack) {
    std::vector<ModelConfig> configs = {vkf::parse_model_config(kFalconRw1b), vkf::parse_model_config(kBaichuan13b),
                                        vkf::parse_model_config(kJais13b), vkf::parse_model_config(kMpt30bGqa)};
    ModelConfig jais = configs[2];
    jais.alibi_train_seq_len = 512;
    configs.push_back(jais);
    jais.alibi_train_seq_len = std::nullopt;
    jais.alibi_scaling_factor = 3.0;
    configs.push_back(jais);
    ModelConfig bloom{.family = ModelFamily::Bloom,
                      .vocab_size = 100,
                      .hidden = 64,
                      .n_layer = 1,
                      .n_head = 2,
                      .n_kv_head = 2,
                      .head_dim = 32,
                      .ffn_hidden = 256,
                      .post_layernorm_residual = true};
    configs.push_back(bloom);
    for (const ModelConfig& config : configs) {
        SCOPED_TRACE(std::string(vkf::family_name(config.family)));
        EXPECT_EQ(vkf::parse_model_config(vkf::hf_config_json(config, vkf::DType::F16)), config);
    }
}

}  // namespace
