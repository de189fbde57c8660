#pragma once
// What the dense (host/ops/matmul.cpp) and the quantized (host/ops/matmul_quant.cpp)
// matmuls share: the K split, the pieces, the argument checks of the fp32 tensors and the
// split-K reduce pass. Not part of the API.

#include "host/ops/matmul.hpp"
#include "host/ops/tensor_binding.hpp"

#include <cstdint>
#include <vector>

namespace vkf::matmul_detail {

// Workgroups the output should give before K is split for parallelism (a CPU device has
// a thread per core, a GPU many more lanes to fill).
std::uint64_t target_workgroups(const MatmulDevice& device);

// Whether the device runs the row-dot kernels: subgroup arithmetic in compute shaders, full
// subgroups of a size the pipeline can require, and workgroups of at least one subgroup.
bool rowdot_fits(const ComputeLimits& limits);

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

// Y, bias and residual of the piece of rows m0..m0+mc and columns n0..n0+nc: Y and the
// residual a span with row stride n. An absent bias or residual gets `unused` (a binding
// the shader never reads) and base 0.
struct EpilogueBindings {
    ElementBinding y, bias, residual;
};
EpilogueBindings bind_epilogue(const ComputeLimits& limits, const MatmulArgs& a, std::uint32_t m0, std::uint32_t mc,
                               std::uint32_t n0, std::uint32_t nc, std::uint32_t bias_bytes,
                               const ElementBinding& unused);

// Checks X, Y, bias (bias_dtype) and residual (or the scatter's Q, caches and step), and the
// scratch range the plan needs; refuses a scatter where the plan has a separate epilogue
// (too few storage buffers per stage for the SCATTER kernels).
void check_tensors(const ComputeLimits& limits, const MatmulArgs& a, const MatmulPlan& plan);

// VKF_MATMUL_FLAG_BIAS, _RESIDUAL, _CLAMP, the activation's and the scatter's flags.
std::uint32_t epilogue_flags(const MatmulArgs& a);

// The epilogue's push members (interface/matmul_flags.h) for the piece whose first row and
// column are m0 and n0.
template <class Push>
void set_epilogue_push(Push& push, const MatmulArgs& a, std::uint32_t m0, std::uint32_t n0) {
    push.row0 = m0;
    push.col0 = n0;
    push.rows = a.m;
    push.clamp_to = a.clamp.value_or(0.0f);
    push.ln_eps = a.x_norm ? a.x_norm->eps : 0.0f;
    if (a.scatter) {
        push.q_heads = a.scatter->q_heads;
        push.kv_heads = a.scatter->kv_heads;
    }
}

// The scatter's K and V cache bindings, appended after Y (none without a scatter).
std::vector<Binding> scatter_bindings(const MatmulArgs& a);

// The split-K second pass (matmul.comp REDUCE) for one piece: adds the partial sums and
// applies the epilogue. `push` holds the piece's epilogue (m, n, ldy, bias_base, res_base,
// y_base, n_splits, flags).
struct ReducePass {
    const Pipeline* pipeline = nullptr;
    std::uint32_t workgroup_size = 0;
};
// The SCATTER variant when `a` scatters (its residual binding is the step, and K and V
// follow Y).
ReducePass reduce_pass(Context& ctx, bool bias_f16, const MatmulArgs& a);

// The SCATTER variants' specialization constant (none without a scatter).
std::vector<SpecConstant> scatter_constants(const MatmulArgs& a);
void dispatch_reduce(CommandList& list, const ReducePass& pass, MatmulPush push, const ElementBinding& partials,
                     const BufferRange* bias, const BufferRange* residual, const BufferRange& y, const MatmulArgs& a);

// The quantized matmul (host/ops/matmul_quant.cpp), reached through plan_matmul and
// record_matmul.
MatmulPlan plan_matmul_quant(const MatmulDevice& device, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                             DType bias_dtype, const MatmulOptions& options, QuantFormat quant);
void record_matmul_quant(Context& ctx, CommandList& list, const MatmulArgs& args);

}  // namespace vkf::matmul_detail
