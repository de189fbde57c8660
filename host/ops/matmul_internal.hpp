#pragma once
// What the matmul's files share; not part of the API. The plans: matmul_plan.cpp (the K
// split, the pieces, the fused work granted), matmul_dense.cpp and matmul_quant.cpp (each
// weight format's kernels). The recording: matmul_record.cpp, one routine for every format,
// which asks the format's WeightSource (matmul_dense.cpp, matmul_quant.cpp) for what differs.

#include "host/ops/matmul.hpp"
#include "host/ops/tensor_binding.hpp"
#include "shaders/interface/matmul_quant.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace vkf::matmul_detail {

// The weights' storage buffers (W; or the values and the scales), which place every binding
// after them (shaders/interface/matmul_bindings.h).
std::uint32_t weight_bindings(const MatmulPlan& plan);
// Storage buffers of the main kernel of `plan`: X, the weights', and bias, residual and Y
// (the separate epilogue's partial sums instead), then the caches of a scatter and a fused
// LayerNorm's weight and bias.
std::uint32_t kernel_bindings(const MatmulPlan& plan, bool scatter, bool x_norm);

// Workgroups the output should give before K is split for parallelism (a CPU device has
// a thread per core, a GPU many more lanes to fill).
std::uint64_t target_workgroups(const MatmulDevice& device);

// Whether the device runs the row-dot kernels: subgroup arithmetic in compute shaders, full
// subgroups of a size the pipeline can require, and workgroups of at least one subgroup.
bool rowdot_fits(const ComputeLimits& limits);

// Whether a kernel with an fp16 form runs it (MatmulArithmetic): the device has fp16
// arithmetic, and F16 was asked for, or Auto on a GPU.
bool f16_arithmetic(const MatmulDevice& device, const MatmulOptions& options);

// The row-dot layout (dense and quantized kernels): block_m = min(m, max_rows) rows and
// groups of `cols` columns, one subgroup each, at most `max_groups` per workgroup, fewer when
// the output is small. Sets subgroup_size, block_m, block_n, column_groups and
// workgroup_size; returns the workgroups of the whole output. Throws vkf::Error (naming
// `what`) when the device cannot run it.
std::uint64_t plan_rowdot(MatmulPlan& plan, const MatmulDevice& device, std::uint32_t m, std::uint32_t n,
                          std::uint32_t max_rows, std::uint32_t cols, std::uint32_t max_groups, const char* what);

// The register-blocked layout: 1 x cols blocks for one row (decoding), rows x cols otherwise,
// in workgroups of at most `max_workgroup`, narrower when the output is small. Sets block_m,
// block_n and workgroup_size; returns the workgroups of the whole output.
std::uint64_t plan_blocked(MatmulPlan& plan, const MatmulDevice& device, std::uint32_t m, std::uint32_t n,
                           std::uint32_t rows, std::uint32_t cols, std::uint32_t max_workgroup);

// Loop iterations of one invocation of `plan` over a K slice of `len` elements.
using LoopCount = std::uint64_t (*)(const MatmulPlan& plan, std::uint64_t len);

// Sets plan.k_split, n_splits and loop_iterations: at least options.force_splits slices,
// enough for parallelism when the `groups` workgroups of the whole output are few, and
// enough that no invocation nears the driver's loop limit; slices are multiples of granule.
void split_k(MatmulPlan& plan, const MatmulDevice& device, std::uint32_t k, std::uint64_t groups, std::uint32_t granule,
             const MatmulOptions& options, LoopCount count);

// Sets rows_per_piece, cols_per_piece and scratch_bytes: X rows, Y spans, partial sums and
// at most `max_w_rows` rows of W (what one binding of the weights holds) per dispatch.
// Throws when one row of X (k floats) does not fit a binding.
void plan_pieces(MatmulPlan& plan, const ComputeLimits& limits, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                 std::uint64_t max_w_rows);

// Each weight format's plan (the shape is checked non-empty).
MatmulPlan plan_matmul_dense(const MatmulDevice& device, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                             DType weight_dtype, const MatmulOptions& options);
MatmulPlan plan_matmul_quant(const MatmulDevice& device, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                             DType bias_dtype, const MatmulOptions& options, QuantFormat quant);
// The K-quants' (matmul_kquant.cpp), called by plan_matmul_quant after its checks of the bias
// type and the storage buffers.
MatmulPlan plan_matmul_kquant(const MatmulDevice& device, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                              const MatmulOptions& options, QuantFormat quant);

// The cooperative-matrix kernel (matmul_coopmat.cpp). coopmat_refusal: why it cannot run
// here on these weights, naming what is missing; nullopt when it can. coopmat_chosen: Auto
// takes it (VKF_LIMITS coopmat, it can run, m >= kCoopMatMinRows). plan_matmul_coopmat throws
// coopmat_refusal's message.
std::optional<std::string> coopmat_refusal(const MatmulDevice& device, DType weight_dtype);
bool coopmat_chosen(const MatmulDevice& device, std::uint32_t m, DType weight_dtype, const MatmulOptions& options);
MatmulPlan plan_matmul_coopmat(const MatmulDevice& device, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                               DType weight_dtype, const MatmulOptions& options);

// The workgroups of one piece of mc rows and nc columns (z: the K slices).
GroupCount piece_groups(const MatmulPlan& plan, std::uint32_t mc, std::uint32_t nc);

// The weights of one piece (rows n0 .. n0 + nc of W, columns of Y) as a kernel reads them.
struct WeightPiece {
    std::vector<Binding> bindings;  // from VKF_MATMUL_BINDING_W: W, or the values and the scales
    std::uint32_t w_base = 0;       // the first element (dense) or word (quantized) of W
    std::uint32_t s_base = 0;       // quantized: the first scale
    // The kernel's load paths the piece's alignment allows (VKF_MATMUL_FLAG_PAIRS, VEC8,
    // VEC16), kept by its partial-sum passes.
    std::uint32_t load_flags = 0;
    const Pipeline* pipeline = nullptr;  // the main kernel for this piece
};

// What differs between weight formats when recording: their tensors, bindings, kernels
// and push blocks. The recorder (matmul_record.cpp) does the rest: pieces, epilogue,
// scatter, fused LayerNorm, partial sums and the reduce pass.
class WeightSource {
public:
    virtual ~WeightSource() = default;
    // The X the kernel reads for a row piece: `x` itself, or (the integer dot-product path)
    // X quantized into scratch by a pass recorded here.
    virtual ElementBinding prepare_x(CommandList& list, const ElementBinding& x, std::uint32_t mc);
    // `x` is the binding the kernel reads (the vector loads need its alignment).
    virtual WeightPiece piece(const ElementBinding& x, std::uint32_t n0, std::uint32_t nc) = 0;
    // The kernel's push block from the fields every format has (`push`; its w_base and
    // flags already the piece's), valid until the next call.
    virtual std::span<const std::byte> push(const MatmulPush& push, const WeightPiece& piece) = 0;
};

// Checks W (and the scales) against the plan's shape and makes the source; `scatter_main`:
// the main kernel scatters (not split).
std::unique_ptr<WeightSource> dense_weights(Context& ctx, const MatmulPlan& plan, const MatmulArgs& args,
                                            bool scatter_main);
// The cooperative-matrix kernel's specialization constants and code: its W is the dense
// kernels' fp16 weights, bound by dense_weights' source.
std::vector<SpecConstant> coopmat_constants(const MatmulPlan& plan);
const SpirvCode& coopmat_code(const MatmulPlan& plan, bool scatter_main);
std::unique_ptr<WeightSource> quant_weights(Context& ctx, const MatmulPlan& plan, const MatmulArgs& args,
                                            bool scatter_main);
// K-quant weights (matmul_kquant.cpp): W is the super-blocks [n, kquant_row_bytes] bytes as a
// GGUF file stores them, bound at both weight bindings; args.scales is not read.
std::unique_ptr<WeightSource> kquant_weights(Context& ctx, const MatmulPlan& plan, const MatmulArgs& args,
                                             bool scatter_main);

// The main kernel's pipeline: the code, the plan's workgroup and subgroup sizes, and its
// storage buffers (kernel_bindings), specialization constants and push layout.
const Pipeline& kernel_pipeline(Context& ctx, const MatmulPlan& plan, const MatmulArgs& args, const SpirvCode& code,
                                std::vector<SpecConstant> constants, const PushConstantLayout& layout,
                                bool scatter_main);

// The blocked quantized kernels' push constants (matmul_quant and matmul_kquant): the dense
// ones, and where the piece's scales start (0 where the scales sit inside the blocks).
MatmulQuantPush quant_push(const MatmulPush& p, std::uint32_t s_base);

}  // namespace vkf::matmul_detail
