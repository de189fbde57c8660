// The family table (host/spec/family_spec.hpp): every ModelFamily value has its entry, every
// name in it (model_type, --family, --preset, option flag) leads back to its family and to no
// other, each entry is consistent with itself (tensor names against traits and settings),
// and what vkf-make-checkpoint builds from each entry validates and survives config.json.

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "host/spec/family_spec.hpp"
#include "host/spec/model_config.hpp"
#include "host/spec/model_tensors.hpp"
#include "tests/support/test_support.hpp"

namespace {

using vkf::CheckpointOption;
using vkf::CheckpointOptionValues;
using vkf::FamilySpec;
using vkf::ModelConfig;
using vkf::ModelFamily;

// Every ModelFamily value. The switch makes a new value a compile error here (-Wswitch is
// an error) until it is listed, and so until the table is checked for it.
constexpr ModelFamily kAllFamilies[] = {ModelFamily::Bloom,    ModelFamily::Mpt,  ModelFamily::Falcon,
                                        ModelFamily::Baichuan, ModelFamily::Jais, ModelFamily::Refact};
[[maybe_unused]] constexpr bool listed(ModelFamily family) {
    switch (family) {
        case ModelFamily::Bloom:
        case ModelFamily::Mpt:
        case ModelFamily::Falcon:
        case ModelFamily::Baichuan:
        case ModelFamily::Jais:
        case ModelFamily::Refact:
            return true;
    }
    return false;
}

// A config of `shape` as vkf-make-checkpoint builds it: sizes, then the family's settings.
ModelConfig writer_config(const FamilySpec& spec, const vkf::CheckpointShape& shape,
                          const CheckpointOptionValues& options) {
    ModelConfig config{.family = spec.family,
                       .vocab_size = shape.vocab_size,
                       .hidden = shape.hidden,
                       .n_layer = shape.n_layer,
                       .n_head = shape.n_head};
    config.n_kv_head = config.n_head;
    config.head_dim = config.hidden / config.n_head;
    config.ffn_hidden = 4 * config.hidden;
    if (spec.writer.configure != nullptr) {
        spec.writer.configure(config, options);
    }
    return config;
}

TEST(FamilyTable, CoversEveryFamilyInOrder) {
    ASSERT_EQ(vkf::families().size(), std::size(kAllFamilies));
    for (std::size_t i = 0; i < std::size(kAllFamilies); ++i) {
        const ModelFamily family = kAllFamilies[i];
        EXPECT_TRUE(listed(family));
        EXPECT_EQ(static_cast<std::size_t>(family), i);
        const FamilySpec& spec = vkf::family_spec(family);
        EXPECT_EQ(spec.family, family);
        EXPECT_EQ(&spec, &vkf::families()[i]);
        EXPECT_EQ(vkf::family_name(family), spec.name);
        EXPECT_EQ(vkf::family_traits(family).architecture, spec.traits.architecture);
        EXPECT_FALSE(spec.display_name.empty());
        EXPECT_NE(spec.parse, nullptr) << spec.name;
        EXPECT_NE(spec.write, nullptr) << spec.name;
    }
    const auto past_the_end = static_cast<ModelFamily>(std::size(kAllFamilies));
    EXPECT_THROW(vkf::family_spec(past_the_end), vkf::Error);
    EXPECT_EQ(vkf::family_name(past_the_end), "unknown");
    const FamilySpec& bloom = vkf::family_spec(ModelFamily::Bloom);
    ModelConfig config = writer_config(bloom, bloom.writer.variants.front().tiny, {});
    config.family = past_the_end;
    EXPECT_EQ(vkf::test::error_message([&] { vkf::validate(config); }), "model config (unknown): unknown family 6");
}

TEST(FamilyTable, EveryNameLeadsBackToItsFamily) {
    std::set<std::string_view> model_types, checkpoint_names, presets, flags;
    for (const FamilySpec& spec : vkf::families()) {
        SCOPED_TRACE(std::string(spec.name));
        ASSERT_FALSE(spec.model_types.empty());
        // config.json names it as family_name does, or Refact's gpt_refact (llama.cpp's architecture
        // and --family say refact).
        EXPECT_TRUE(spec.model_types.front() == spec.name ||
                    spec.model_types.front() == "gpt_" + std::string(spec.name))
            << spec.model_types.front();
        for (std::string_view type : spec.model_types) {
            EXPECT_TRUE(model_types.insert(type).second) << type << " is read by two families";
            EXPECT_EQ(vkf::find_family_by_model_type(type), &spec);
        }
        ASSERT_FALSE(spec.writer.variants.empty());
        EXPECT_EQ(spec.writer.variants.front().name, spec.name);  // --family NAME as family_name
        for (const vkf::CheckpointVariant& variant : spec.writer.variants) {
            EXPECT_TRUE(checkpoint_names.insert(variant.name).second) << variant.name;
            const vkf::CheckpointFamily found = vkf::find_checkpoint_family(variant.name);
            EXPECT_EQ(found.spec, &spec);
            EXPECT_EQ(found.variant, &variant);
        }
        for (const vkf::CheckpointPreset& preset : spec.writer.presets) {
            EXPECT_NE(preset.name, "tiny");  // the one preset every family has, by variant
            EXPECT_TRUE(presets.insert(preset.name).second) << preset.name;
            const vkf::CheckpointFamilyPreset found = vkf::find_checkpoint_preset(preset.name);
            EXPECT_EQ(found.spec, &spec);
            EXPECT_EQ(found.preset, &preset);
        }
        for (const CheckpointOption& option : spec.writer.options) {
            EXPECT_TRUE(option.flag.starts_with("--")) << option.flag;
            EXPECT_TRUE(flags.insert(option.flag).second) << option.flag << " is declared by two families";
            EXPECT_FALSE(option.help.empty()) << option.flag;
            EXPECT_EQ(option.kind == CheckpointOption::Kind::Flag, option.value_name.empty()) << option.flag;
        }
    }
    EXPECT_EQ(vkf::find_family_by_model_type("llama"), nullptr);
    EXPECT_EQ(vkf::find_family_by_model_type("BLOOM"), nullptr);
    EXPECT_EQ(vkf::find_checkpoint_family("jina-bert").spec, nullptr);  // an encoder: not this table
    EXPECT_EQ(vkf::find_checkpoint_preset("tiny").spec, nullptr);
}

TEST(FamilyTable, TensorNamesAgreeWithTraitsAndSettings) {
    for (const FamilySpec& spec : vkf::families()) {
        SCOPED_TRACE(std::string(spec.name));
        const vkf::FamilyTensorNames& t = spec.tensors;
        for (std::string_view name :
             {t.embedding, t.layer_prefix, t.attn_norm, t.qkv, t.attn_out, t.mlp_norm, t.up, t.down, t.final_norm}) {
            EXPECT_FALSE(name.empty());
        }
        EXPECT_EQ(t.gate.empty(), spec.traits.mlp != vkf::MlpKind::Gated);
        EXPECT_EQ(t.embedding_norm.empty(), !spec.traits.embedding_norm);
        EXPECT_EQ(t.q_norm.empty(), !spec.settings.qk_ln);
        EXPECT_EQ(t.k_norm.empty(), !spec.settings.qk_ln);
        EXPECT_EQ(t.position_embedding.empty(), !spec.settings.learned_pos_emb);
        EXPECT_TRUE(!spec.no_bias_drops_norm_bias || spec.settings.no_bias);
    }
}

TEST(FamilyTable, EveryCheckpointVariantValidatesAndRoundTrips) {
    for (const FamilySpec& spec : vkf::families()) {
        for (const vkf::CheckpointVariant& variant : spec.writer.variants) {
            SCOPED_TRACE(std::string(variant.name));
            // --preset tiny's promise (vkf-make-checkpoint --help): 2 layers, head size 32.
            EXPECT_EQ(variant.tiny.n_layer, 2u);
            EXPECT_EQ(variant.tiny.hidden, 32 * variant.tiny.n_head);
            const ModelConfig config = writer_config(spec, variant.tiny, {});
            if (variant.check != nullptr) {
                EXPECT_NO_THROW(variant.check(config));
            }
            ASSERT_NO_THROW(vkf::validate(config));
            const ModelConfig parsed = vkf::parse_model_config(vkf::hf_config_json(config, vkf::DType::BF16));
            EXPECT_EQ(parsed, config);
            EXPECT_EQ(vkf::find_checkpoint_family(variant.name).spec->family, parsed.family);
        }
        for (const vkf::CheckpointPreset& preset : spec.writer.presets) {
            EXPECT_NO_THROW(vkf::validate(writer_config(spec, preset.shape, {}))) << preset.name;
        }
    }
    // baichuan2 is told apart by its vocabulary alone.
    const vkf::CheckpointFamily baichuan2 = vkf::find_checkpoint_family("baichuan2");
    ASSERT_NE(baichuan2.variant, nullptr);
    ASSERT_NE(baichuan2.variant->check, nullptr);
    ModelConfig config = writer_config(*baichuan2.spec, baichuan2.variant->tiny, {});
    EXPECT_TRUE(config.normalized_lm_head);
    config.vocab_size = 512;
    const std::string message = vkf::test::error_message([&] { baichuan2.variant->check(config); });
    EXPECT_NE(message.find("Baichuan2 is recognized by its vocabulary of 125696"), std::string::npos) << message;
}

// validate() takes exactly the settings the table gives each family: each one alone is
// accepted where FamilySettings allows it and refused naming the family elsewhere.
TEST(FamilyTable, ValidateFollowsEachFamilysSettings) {
    struct Case {
        bool vkf::FamilySettings::*allowed;
        void (*apply)(ModelConfig&);
    };
    const Case cases[] = {
        {&vkf::FamilySettings::grouped_query, [](ModelConfig& c) { c.n_kv_head = 1; }},
        {&vkf::FamilySettings::clip_qkv, [](ModelConfig& c) { c.clip_qkv = 4.0; }},
        {&vkf::FamilySettings::qk_ln, [](ModelConfig& c) { c.qk_ln = true; }},
        {&vkf::FamilySettings::learned_pos_emb, [](ModelConfig& c) { c.learned_pos_emb = true; }},
        {&vkf::FamilySettings::no_alibi, [](ModelConfig& c) { c.alibi = false; }},
        {&vkf::FamilySettings::alibi_bias_max, [](ModelConfig& c) { c.alibi_bias_max = 4.0; }},
        {&vkf::FamilySettings::softmax_scale, [](ModelConfig& c) { c.softmax_scale = 1.0; }},
        {&vkf::FamilySettings::logit_scale, [](ModelConfig& c) { c.logit_scale = 0.5; }},
        {&vkf::FamilySettings::embedding_scale, [](ModelConfig& c) { c.embedding_scale = 2.0; }},
        {&vkf::FamilySettings::alibi_scaling, [](ModelConfig& c) { c.alibi_train_seq_len = 8; }},
        {&vkf::FamilySettings::post_layernorm_residual, [](ModelConfig& c) { c.post_layernorm_residual = true; }},
        {&vkf::FamilySettings::normalized_lm_head,
         [](ModelConfig& c) {
             c.normalized_lm_head = true;
             c.tie_word_embeddings = false;
         }},
        {&vkf::FamilySettings::no_bias, [](ModelConfig& c) { c.no_bias = true; }},
    };
    std::size_t refused = 0;
    for (const FamilySpec& spec : vkf::families()) {
        for (std::size_t i = 0; i < std::size(cases); ++i) {
            SCOPED_TRACE(std::string(spec.name) + ", setting " + std::to_string(i));
            ModelConfig config = writer_config(spec, spec.writer.variants.front().tiny, {});
            cases[i].apply(config);
            if (spec.settings.*cases[i].allowed) {
                EXPECT_NO_THROW(vkf::validate(config));
            } else {
                ++refused;
                const std::string message = vkf::test::error_message([&] { vkf::validate(config); });
                EXPECT_NE(message.find("is not a setting of " + std::string(spec.name) + " models"), std::string::npos)
                    << message;
            }
        }
    }
    EXPECT_GT(refused, 0u);
}

// Each family-only option changes the config it writes, and the result still validates: an
// option declared in the table but ignored by `configure` fails here.
TEST(FamilyTable, EveryCheckpointOptionTakesEffect) {
    for (const FamilySpec& spec : vkf::families()) {
        const vkf::CheckpointShape& tiny = spec.writer.variants.front().tiny;
        const ModelConfig plain = writer_config(spec, tiny, {});
        for (const CheckpointOption& option : spec.writer.options) {
            SCOPED_TRACE(std::string(spec.name) + " " + std::string(option.flag));
            CheckpointOptionValues values;
            values.set(option.flag, option.kind == CheckpointOption::Kind::Flag       ? 1.0
                                    : option.kind == CheckpointOption::Kind::Positive ? 2.0
                                                                                      : option.min + 1.0);
            const ModelConfig changed = writer_config(spec, tiny, values);
            EXPECT_NE(changed, plain);
            EXPECT_NO_THROW(vkf::validate(changed));
        }
    }
}

TEST(FamilyTable, OptionValuesAndLists) {
    CheckpointOptionValues values;
    EXPECT_TRUE(values.empty());
    EXPECT_FALSE(values.given("--qk-ln"));
    EXPECT_EQ(values.number("--clip-qkv"), std::nullopt);
    values.set("--kv-heads", 4.0);
    values.set("--clip-qkv", 2.5);
    values.set("--clip-qkv", 3.5);  // the last one given wins
    EXPECT_EQ(values.count("--kv-heads"), 4u);
    EXPECT_EQ(values.number("--clip-qkv"), 3.5);
    EXPECT_THROW(values.count("--clip-qkv"), vkf::Error);  // not a whole number

    const std::vector<std::string_view> words = {"a", "b", "c"};
    EXPECT_EQ(vkf::and_list({}), "");
    EXPECT_EQ(vkf::and_list(std::span(words).first(1)), "a");
    EXPECT_EQ(vkf::and_list(std::span(words).first(2)), "a and b");
    EXPECT_EQ(vkf::and_list(words), "a, b and c");
}

}  // namespace
