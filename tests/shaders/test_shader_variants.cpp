// The generated variant table and shaders::variant(), and every variant's push-constant
// block against the C++ struct of its family (no device needed: SPIR-V reflection only).

#include "runtime/push_constants.hpp"
#include "runtime/spirv_reflect.hpp"
#include "shaders/interface/activation.h"
#include "shaders/interface/attention.h"
#include "shaders/interface/bench_ceilings.h"
#include "shaders/interface/elementwise.h"
#include "shaders/interface/embedding.h"
#include "shaders/interface/gated_activation.h"
#include "shaders/interface/kv_append.h"
#include "shaders/interface/layernorm.h"
#include "shaders/interface/matmul.h"
#include "shaders/interface/matmul_quant.h"
#include "shaders/interface/matmul_quant_x.h"
#include "shaders/interface/pooling.h"
#include "shaders/interface/scale.h"
#include "shaders/variants.hpp"
#include "tests/support/test_support.hpp"

#include <map>
#include <set>
#include <string>

namespace vkf::test {
namespace {

void expect_contains(const std::string& message, const std::string& needle) {
    EXPECT_NE(message.find(needle), std::string::npos) << message;
}

std::string name_of(const SpirvCode& code) {
    return std::string(code.name);
}

TEST(ShaderVariants, TheTableHoldsEachFamilysMatrixOnce) {
    std::map<std::string, std::set<std::set<std::string>>> seen;
    std::set<std::string> names;
    for (const shaders::ShaderVariant& v : shaders::all_variants()) {
        const std::set<std::string> defines(v.defines.begin(), v.defines.end());
        EXPECT_EQ(defines.size(), v.defines.size()) << v.code->name;
        EXPECT_TRUE(seen[std::string(v.family)].insert(defines).second) << "twice: " << v.code->name;
        EXPECT_TRUE(names.insert(name_of(*v.code)).second) << v.code->name;
        EXPECT_EQ(name_of(*v.code).rfind(std::string(v.family), 0), 0u) << v.code->name;
        EXPECT_GT(v.code->words.size(), 5u);
    }
    // SUBGROUP_LOADS x (unsplit, SPLIT_KV, SPLIT_KV+PACKED_TABLES) x (fp32, STORAGE_F16, KV_F16) x
    // PAIR_LOADS: STORAGE_F16+KV_F16 is excluded; and KV_QUANT (head sizes of 32n: no
    // PAIR_LOADS) x SUBGROUP_LOADS x the splits: 36 + 6.
    EXPECT_EQ(seen["attention_rows"].size(), 42u);
    // 9 kernels (ROWDOT and ROWDOT+WIDE64 also with LN_X) x WEIGHTS_F16 x SCATTER, and NO_EPILOGUE
    // (4 storage buffers) of the 6 kernels without LN_X or REDUCE x WEIGHTS_F16; TILED_F16 and
    // GEMV_F16 (fp16 arithmetic, fp16 weights implied) x SCATTER and with NO_EPILOGUE: 3 more
    // each (GEMV_F16: 51 -> 54).
    EXPECT_EQ(seen["matmul"].size(), 54u);
    // SCORES and SCORES+PACKED_TABLES and PV in both storages and with KV_QUANT; softmax has no
    // storage variant.
    EXPECT_EQ(seen["attention_naive"].size(), 10u);
    // (unsplit, SPLIT_KV, SPLIT_KV+PACKED_TABLES) x (fp32, STORAGE_F16, STORAGE_F16+ARITH_F16,
    // KV_F16, KV_F16+ARITH_F16, KV_QUANT, KV_QUANT+ARITH_F16) x (shared memory, SUBGROUP_REDUCE,
    // SUBGROUP_REDUCE+SUBGROUP_ANY_SIZE): 63 (45 before the quantized K/V cache). Was 9 before the fp16-arithmetic and
    // subgroup variants (ARITH_F16 only with fp16 K/V: all-fp16 tensors, or fp32 Q/O over a session's fp16 cache), 30
    // before SUBGROUP_ANY_SIZE (devices without subgroup size control; every combination, since such a device plans it
    // wherever the others would take SUBGROUP_REDUCE).
    EXPECT_EQ(seen["attention"].size(), 63u);
}

TEST(ShaderVariants, AreFoundByTheirDefinesInAnyOrder) {
    EXPECT_EQ(name_of(shaders::variant("attention_rows", {"STORAGE_F16", "SUBGROUP_LOADS"})),
              "attention_rows[SUBGROUP_LOADS,STORAGE_F16]");
    EXPECT_EQ(
        &shaders::variant("attention_rows", {"STORAGE_F16", "SUBGROUP_LOADS"}),
        &shaders::variant("attention_rows", {{"SUBGROUP_LOADS", true}, {"SPLIT_KV", false}, {"STORAGE_F16", true}}));
    EXPECT_EQ(name_of(shaders::variant("matmul", {})), "matmul");
    EXPECT_EQ(name_of(shaders::variant("matmul", {{"GEMV", false}, {"WEIGHTS_F16", false}})), "matmul");
    EXPECT_EQ(name_of(shaders::variant("matmul", {"WEIGHTS_F16", "WIDE64", "ROWDOT"})),
              "matmul[ROWDOT,WIDE64,WEIGHTS_F16]");
    EXPECT_EQ(name_of(shaders::variant("bench_ceilings", {"COPY"})), "bench_ceilings[COPY]");
    const std::vector<shaders::Define> built = {{"SPLIT_KV", true}, {"STORAGE_F16", false}};
    EXPECT_EQ(name_of(shaders::variant("attention", built)), "attention[SPLIT_KV]");
}

TEST(ShaderVariants, MissingOnesAreRefusedWithWhatExists) {
    expect_contains(error_message([] { shaders::variant("atention", {}); }),
                    "no shader family 'atention'; the families are elementwise, attention, attention_rows,");
    // A misspelt define is an error even when it asks for the define's absence.
    expect_contains(error_message([] {
                        shaders::variant("attention", {{"SPLT_KV", false}});
                    }),
                    "shader variant attention: no variant of attention has define SPLT_KV; the variants are "
                    "attention, attention[SUBGROUP_REDUCE], attention[SUBGROUP_REDUCE,SUBGROUP_ANY_SIZE], "
                    "attention[STORAGE_F16], attention[STORAGE_F16,SUBGROUP_REDUCE], "
                    "attention[STORAGE_F16,SUBGROUP_REDUCE,SUBGROUP_ANY_SIZE], attention[STORAGE_F16,ARITH_F16], ");
    expect_contains(error_message([] { shaders::variant("matmul", {"WIDE64"}); }),
                    "no shader variant matmul[WIDE64]; the variants of matmul are matmul, matmul[NO_EPILOGUE], "
                    "matmul[SCATTER], matmul[WEIGHTS_F16], matmul[WEIGHTS_F16,NO_EPILOGUE], "
                    "matmul[WEIGHTS_F16,SCATTER], matmul[TILED_F16], matmul[TILED_F16,NO_EPILOGUE], "
                    "matmul[TILED_F16,SCATTER], matmul[GEMV]");
    expect_contains(error_message([] {
                        shaders::variant("matmul", {"GEMV_F16", "WEIGHTS_F16"});
                    }),
                    "no shader variant matmul[GEMV_F16,WEIGHTS_F16]");
    expect_contains(error_message([] {
                        shaders::variant("attention_naive", {"SOFTMAX", "STORAGE_F16"});
                    }),
                    "no shader variant attention_naive[SOFTMAX,STORAGE_F16]");
    // All fp16 already has fp16 K/V.
    expect_contains(error_message([] {
                        shaders::variant("attention_rows", {"STORAGE_F16", "KV_F16"});
                    }),
                    "no shader variant attention_rows[STORAGE_F16,KV_F16]");
    expect_contains(error_message([] {
                        shaders::variant("matmul", {"GEMV", "BLOCKED"});
                    }),
                    "no shader variant matmul[GEMV,BLOCKED]");
    expect_contains(error_message([] {
                        shaders::variant("matmul", {"GEMV", {"GEMV", false}});
                    }),
                    "define GEMV is named twice");
}

// The C++ side of each family; a family added without one fails here.
const std::map<std::string, PushConstantLayout>& layouts() {
    static const std::map<std::string, PushConstantLayout> all = {
        {"elementwise", ElementwisePush::layout},
        {"attention", AttentionPush::layout},
        {"attention_rows", AttentionPush::layout},
        {"attention_combine", AttentionPush::layout},
        {"attention_naive", AttentionPush::layout},
        {"matmul", MatmulPush::layout},
        {"layernorm", LayerNormPush::layout},
        {"activation", ActivationPush::layout},
        {"embedding", EmbeddingPush::layout},
        {"kv_append", KvAppendPush::layout},
        {"bench_ceilings", CeilingPush::layout},
        {"matmul_quant", MatmulQuantPush::layout},
        {"matmul_kquant", MatmulQuantPush::layout},
        {"matmul_coopmat", MatmulPush::layout},
        {"matmul_quant_x", MatmulQuantXPush::layout},
        {"gated_activation", GatedActivationPush::layout},
        {"scale", ScalePush::layout},
        {"pooling", PoolingPush::layout},
    };
    return all;
}

TEST(ShaderInterfaces, EveryVariantsPushConstantsMatchItsFamilysStruct) {
    for (const shaders::ShaderVariant& v : shaders::all_variants()) {
        const auto layout = layouts().find(std::string(v.family));
        ASSERT_NE(layout, layouts().end()) << "no C++ push-constant struct for family " << v.family;
        const ShaderInterface iface = reflect_shader(*v.code);
        EXPECT_EQ(iface.push_constant_members.size(), layout->second.members.size()) << v.code->name;
        try {
            check_push_constants(iface, layout->second, name_of(*v.code) + ": ");
        } catch (const Error& e) {
            ADD_FAILURE() << e.what();
        }
    }
}

}  // namespace
}  // namespace vkf::test
