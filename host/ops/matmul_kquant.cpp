// The matmul with ggml's K-quant (and Q4_1, Q5_0, Q5_1) weights read as stored
// (shaders/matmul_kquant.comp): its plan and its
// WeightSource, recorded by matmul_record.cpp like the other formats'. The K split, the
// pieces and the reduce pass are the dense matmul's (matmul_internal.hpp).

#include "base/error.hpp"
#include "host/ops/matmul_internal.hpp"
#include "host/quant/kquant_format.hpp"
#include "host/util/math.hpp"
#include "shaders/variants.hpp"

#include <fmt/format.h>

#include <array>

namespace vkf::matmul_detail {

namespace {

// An invocation's block of Y (1 x 4 for one row), and the widest workgroup. Four columns,
// not the 32-weight formats' eight: a column holds 16 sub-block multipliers in registers.
constexpr std::uint32_t kBlockRows = 4;
constexpr std::uint32_t kBlockCols = 4;
constexpr std::uint32_t kBlockedWorkgroup = 64;
// Storage buffers of matmul_kquant.comp's layout: X, W (twice), bias, residual, Y.
constexpr std::uint32_t kKQuantBindings = 6;

// Loop iterations of one invocation over a K slice of `len`, per super-block the most of the
// K-quants' (the kernel keeps its inner loops): Q6_K's 1 + 2 halves + 8 groups + 64 words
// (Q4_K and Q5_K: 1 + 4 pairs + 32 words); per 32-weight block (Q4_1, Q5_*) 1 + 4 words.
std::uint64_t kquant_loop_iterations(const MatmulPlan& plan, std::uint64_t len) {
    const std::uint32_t block = kquant_block_weights(kquant_ggml_type(plan.quant));
    return ceil_div(len, std::uint64_t{block}) * (block == kKQuantBlock ? 75 : 5) + 8;
}

std::string shape(std::uint32_t m, std::uint32_t n, std::uint32_t k) {
    return fmt::format("[{}, {}, {}]", m, n, k);
}

class KQuantWeights final : public WeightSource {
public:
    KQuantWeights(Context& ctx, const MatmulPlan& plan, const MatmulArgs& a, bool scatter_main)
        : ctx_(ctx),
          limits_(ctx.limits()),
          plan_(plan),
          a_(a),
          scatter_main_(scatter_main),
          row_bytes_(kquant_row_bytes(kquant_ggml_type(a.quant), a.k, "matmul W")) {
        check_tensor(
            a.w, a.n * row_bytes_, 1, "matmul", "W super-blocks",
            shape_text({a.n, static_cast<std::uint32_t>(row_bytes_)}, fmt::format("bytes ({})", to_string(a.quant))));
    }

    WeightPiece piece(const ElementBinding& /*x*/, std::uint32_t n0, std::uint32_t nc) override {
        const ElementBinding w =
            bind_elements(limits_, a_.w, n0 * row_bytes_, nc * row_bytes_, 1, "matmul", "W super-blocks");
        // Whole-word blocks from a word-aligned first byte read one word a load (KQ_ALIGNED).
        const bool aligned = kquant_block_bytes(kquant_ggml_type(a_.quant)) % 4 == 0 && w.base % 4 == 0;
        return WeightPiece{.bindings = {{w.range, Access::Read}, {w.range, Access::Read}},
                           .w_base = w.base,
                           .pipeline = &pipeline(aligned)};
    }

    std::span<const std::byte> push(const MatmulPush& p, const WeightPiece& /*piece*/) override {
        push_ = quant_push(p, 0);
        return push_bytes(push_);
    }

private:
    const Pipeline& pipeline(bool aligned) {
        const Pipeline*& pipeline = pipelines_[aligned ? 1 : 0];
        if (pipeline == nullptr) {
            const bool f16 = a_.weight_dtype == DType::F16;
            const SpirvCode& code = shaders::variant("matmul_kquant", {{"Q2_K", a_.quant == QuantFormat::Q2_K},
                                                                       {"Q3_K", a_.quant == QuantFormat::Q3_K},
                                                                       {"Q4_K", a_.quant == QuantFormat::Q4_K},
                                                                       {"Q5_K", a_.quant == QuantFormat::Q5_K},
                                                                       {"Q6_K", a_.quant == QuantFormat::Q6_K},
                                                                       {"Q4_1", a_.quant == QuantFormat::Q4_1},
                                                                       {"Q5_0", a_.quant == QuantFormat::Q5_0},
                                                                       {"Q5_1", a_.quant == QuantFormat::Q5_1},
                                                                       {"BIAS_F16", f16 && !plan_.separate_epilogue},
                                                                       {"SCATTER", scatter_main_},
                                                                       {"NO_EPILOGUE", plan_.separate_epilogue},
                                                                       {"KQ_ALIGNED", aligned}});
            pipeline =
                &kernel_pipeline(ctx_, plan_, a_, code,
                                 {{VKF_MATMUL_QUANT_SPEC_RM, plan_.block_m}, {VKF_MATMUL_QUANT_SPEC_RN, plan_.block_n}},
                                 MatmulQuantPush::layout, scatter_main_);
        }
        return *pipeline;
    }

    Context& ctx_;
    const ComputeLimits& limits_;
    const MatmulPlan& plan_;
    const MatmulArgs& a_;
    bool scatter_main_;
    std::uint64_t row_bytes_;
    std::array<const Pipeline*, 2> pipelines_{};  // [1]: KQ_ALIGNED
    MatmulQuantPush push_{};
};

}  // namespace

MatmulPlan plan_matmul_kquant(const MatmulDevice& device, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                              const MatmulOptions& options, QuantFormat quant) {
    const ComputeLimits& limits = device.limits;
    const std::uint32_t block = kquant_block_weights(kquant_ggml_type(quant));
    if (k % block != 0) {
        throw Error(
            fmt::format("matmul {} with {} weights: k = {} is not a multiple of the block size {}; "
                        "W [n, k] must be whole blocks along k",
                        shape(m, n, k), to_string(quant), k, block));
    }
    if (options.kernel != MatmulKernel::Auto && options.kernel != MatmulKernel::Blocked) {
        throw Error(fmt::format("matmul: the {} kernel does not read {} weights (K-quants have the blocked kernel)",
                                to_string(options.kernel), to_string(quant)));
    }
    if (options.int8_activations) {
        throw Error(
            fmt::format("matmul: {} weights have no int8-activation kernel (int8_activations is for q8_0 "
                        "and q4_0 weights)",
                        to_string(quant)));
    }
    MatmulPlan plan;
    plan.kernel = MatmulKernel::Blocked;
    plan.quant = quant;
    plan.separate_epilogue = limits.storage_buffers < kKQuantBindings;
    const std::uint64_t groups = plan_blocked(plan, device, m, n, kBlockRows, kBlockCols, kBlockedWorkgroup);
    plan.blocks_per_step = 1;
    split_k(plan, device, k, groups, block, options, kquant_loop_iterations);
    plan_pieces(plan, limits, m, n, k, max_bound_elements(limits, 1) / kquant_row_bytes(kquant_ggml_type(quant), k));
    return plan;
}

std::unique_ptr<WeightSource> kquant_weights(Context& ctx, const MatmulPlan& plan, const MatmulArgs& args,
                                             bool scatter_main) {
    return std::make_unique<KQuantWeights>(ctx, plan, args, scatter_main);
}

}  // namespace vkf::matmul_detail
