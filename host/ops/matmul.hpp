#pragma once
// Matrix multiply of activations by weights^T with a fused epilogue (shaders/matmul.comp):
// Y[m, n] = act(X[m, k] . W[n, k]^T + bias[n]) + residual[m, n], and the plan (kernel,
// tiles, K slices, pieces) chosen from the device limits. W may be block-quantized (q8_0,
// q4_0: host/quant/quant_format.hpp), then the kernels of shaders/matmul_quant.comp run.
// The plan also answers whether fused work the caller asks for (MatmulOptions::scatter,
// x_norm) runs inside the matmul; record_matmul(ctx, list, plan, args) records that plan.

#include "host/quant/quant_format.hpp"
#include "host/spec/activation.hpp"
#include "host/util/dtype.hpp"
#include "runtime/context.hpp"
#include "shaders/interface/matmul.h"
#include "shaders/interface/matmul_quant.h"

#include <optional>
#include <string>

namespace vkf {

// Tiled (shared-memory tiles, GPUs' prefill), Gemv (workgroup per few outputs, GPUs'
// decode), Blocked (register blocks without shared memory: CPU devices and the fallback),
// RowDot (subgroup lanes along K with 16-byte loads: CPU devices' decode; needs subgroup
// arithmetic and full subgroups of a required size, ComputeLimits::subgroup_size_control).
// Quantized weights have a row-dot kernel (decode; needs the same, on GPUs too) and a blocked
// one (prefill and the fallback) of their own, and no other.
// CoopMat: cooperative matrices (VK_NV_cooperative_matrix: NVIDIA's tensor cores) on fp16
// weights, fp16 products summed in fp32 (shaders/matmul_coopmat.comp). It has never run (no
// device here has the extension), so it is opt-in: taken when forced here, or by Auto where
// VKF_LIMITS has `coopmat` (ComputeLimits::prefer_coopmat) and m >= kCoopMatMinRows; forced on a
// device or weights without it, the plan throws saying what is missing (matmul_coopmat.cpp).
enum class MatmulKernel : std::uint32_t { Auto = 0, Tiled, Gemv, Blocked, RowDot, CoopMat };
const char* to_string(MatmulKernel k);

// The arithmetic of the inner products (MatmulPlan::f16_arithmetic). F16: X and the weights
// in fp16, packed fp16 multiply-adds into an fp16 partial that is added to an fp32
// accumulator every kF16FoldProducts products (bias, epilogue and the sum across folds and
// quantization blocks stay fp32); only where the device has fp16 arithmetic (shaderFloat16,
// not VKF_LIMITS no_fp16_arithmetic) and the kernel has an fp16 form: the tiled and GEMV
// kernels on fp16 weights, and the quantized row-dot and blocked kernels (not the int8 path). Elsewhere
// F16 runs fp32. Auto: F16 where it may, except on CPU devices (llvmpipe emulates fp16).
// F32: today's fp32 arithmetic everywhere.
enum class MatmulArithmetic : std::uint32_t { Auto = 0, F32, F16 };
const char* to_string(MatmulArithmetic a);
// Products summed in fp16 before each fold into fp32 (docs/DESIGN.md: the error bound).
inline constexpr std::uint32_t kF16FoldProducts = 8;

struct MatmulOptions {
    MatmulKernel kernel = MatmulKernel::Auto;  // tests force each kernel
    // 0: chosen; n: at least n K slices (split-K), and none added for parallelism (slices
    // the driver's loop limit needs are always added).
    std::uint32_t force_splits = 0;
    // Quantized weights only, opt-in because it changes the numerics: X is quantized per
    // block of 32 to int8 (one fp32 scale a block) by a pre-pass into scratch, and the blocked
    // kernel sums int32 dot products of packed 4x8-bit words per block (INTDOT). Taken where
    // the device has shaderIntegerDotProduct (ComputeLimits::integer_dot_product; VKF_LIMITS
    // no_integer_dot turns it off) and the kernel is Auto or Blocked; the float kernels run
    // otherwise (MatmulPlan::int_dot says which).
    bool int8_activations = false;
    MatmulArithmetic arithmetic = MatmulArithmetic::Auto;  // fp16 inner products where they run
    // Fused work the caller asks for; the plan answers in MatmulPlan::scatter and x_norm, and
    // where it refuses, the caller runs the separate passes (KV append, LayerNorm).
    bool scatter = false;  // the caller wants the fused QKV scatter epilogue
    bool x_norm = false;   // the caller would like its LayerNorm fused (XLayerNorm)
};

// The fused QKV projection of a transformer layer (SCATTER kernels, shaders/matmul_epilogue.glsl):
// the epilogue writes the Q columns to MatmulArgs::y as [m, q_heads, head_dim] fp32 and the
// K and V columns of X row r into cache row slots[r] (vLLM's slot_mapping: a paged cache's
// slot = block * block_size + offset), so no pass repacks Q or appends to the cache. The
// slots are read when the list runs: the caller writes them before each submission, and one
// recorded list serves every step. A slot >= the caches' rows (e.g. 0xFFFFFFFF for a padding
// row) writes nothing. W's rows (the output columns) are BLOOM's [n_head, 3, head_dim]
// (interleaved, q_heads == kv_heads) or [q | k | v] blocks; n = (q_heads + 2 kv_heads) x head_dim.
struct QkvScatter {
    BufferRange k_cache, v_cache;  // [capacity, kv_heads, head_dim] cache_dtype, bound whole
    BufferRange slots;             // [m] uint32: the cache row of each X row (distinct)
    DType cache_dtype = DType::F16;
    std::uint32_t head_dim = 0, q_heads = 0, kv_heads = 0;
    bool interleaved = false;
};

// The fused epilogue's kernels bind 5 storage buffers (dense; 6 quantized). Devices that
// allow fewer (Vulkan guarantees 4) get MatmulPlan::separate_epilogue: the kernels write
// partial sums to scratch (3 and 4 buffers) and the split-K reduce pass (4) applies the
// epilogue. Fewer than this is refused.
inline constexpr std::uint32_t kSeparateEpilogueBindings = 4;

// LayerNorm of X fused into the matmul (MatmulArgs::x_norm): X is the raw input and the
// kernel normalizes each row as it loads it, (x - mean) / sqrt(var + eps) * weight + bias.
// Only the row-dot kernel of dense weights does it, and it pays only for short rows: ask
// with MatmulOptions::x_norm, and run record_layernorm first where MatmulPlan::x_norm is false.
struct XLayerNorm {
    BufferRange weight;  // [k] in MatmulArgs::weight_dtype
    BufferRange bias;    // [k] likewise, or no buffer
    float eps = 1e-5f;
};

struct MatmulArgs {
    BufferRange x;         // [m, k] fp32
    BufferRange w;         // [n, k] weight_dtype (PyTorch's Linear.weight layout)
    BufferRange bias;      // [n] weight_dtype, or no buffer
    BufferRange residual;  // [m, n] fp32 added last, or no buffer; may be the same range as y
    BufferRange y;         // [m, n] fp32, not overlapping x, w or bias
    BufferRange scratch;   // split-K partial sums and int8 X: matmul_scratch_bytes() bytes, unused when 0
    std::uint32_t m = 0, n = 0, k = 0;
    DType weight_dtype = DType::F32;
    Activation activation = Activation::None;
    MatmulOptions options;
    // Block-quantized weights: w is then the values plane [n, quant_row_bytes(quant, k)] bytes
    // and scales the fp16 scales [n, k / 32]; weight_dtype is the dtype of the bias (F32 or F16).
    // k must be a multiple of 32, and w must start on a 32-bit word (the blocks are read as
    // words; 16-byte aligned rows of X and W are read as vectors, which is faster).
    QuantFormat quant = QuantFormat::None;
    BufferRange scales;
    // Set: y is Q and the epilogue scatters (QkvScatter); no residual. Needs MatmulPlan::scatter.
    std::optional<QkvScatter> scatter = std::nullopt;
    // Set: the epilogue clamps to [-clamp, clamp] after bias and activation (MPT's clip_qkv).
    std::optional<float> clamp = std::nullopt;
    // Set: X is normalized by the kernel (XLayerNorm). Needs MatmulPlan::x_norm.
    std::optional<XLayerNorm> x_norm = std::nullopt;
};

// Plans (with MatmulOptions::scatter and x_norm set from args) and records that plan: a
// convenience for callers that do not look at the plan. Throws vkf::Error, saying why, where
// the plan refuses the scatter or the fused LayerNorm that args ask for.
void record_matmul(Context& ctx, CommandList& list, const MatmulArgs& args);
// Bytes of scratch record_matmul needs for this shape on this device (0: none). The plan
// splits K for long reductions on drivers with a loop limit and for parallelism when the
// output is small; the integer dot-product path keeps quantized X there.
std::uint64_t matmul_scratch_bytes(const Context& ctx, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                                   DType weight_dtype, MatmulOptions options = {},
                                   QuantFormat quant = QuantFormat::None);

// MatmulPush (push constants), VKF_MATMUL_FLAG_* and VKF_MATMUL_SPEC_*: shaders/interface/matmul.h;
// MatmulQuantPush and VKF_MATMUL_QUANT_*: shaders/interface/matmul_quant.h.
static_assert(sizeof(MatmulPush) == 76);
static_assert(sizeof(MatmulQuantPush) == 76);

// What the plan needs to know of the device.
struct MatmulDevice {
    ComputeLimits limits;
    // A CPU implementation (lavapipe): every memory load, shared memory included, costs per
    // invocation and barriers switch coroutines, so the register-blocked kernel (prefill) and
    // the row-dot kernel (decode, with subgroup arithmetic) win there.
    bool cpu = false;
};
MatmulDevice matmul_device(const Context& ctx);

struct MatmulPlan {
    std::uint32_t m = 0, n = 0, k = 0;  // the shape planned for
    DType weight_dtype = DType::F32;    // as MatmulArgs::weight_dtype
    MatmulKernel kernel = MatmulKernel::Tiled;
    QuantFormat quant = QuantFormat::None;             // the weights' block format, or None
    std::uint32_t tile_m = 0, tile_n = 0, tile_k = 0;  // tiled: Y tile and K step
    std::uint32_t block_m = 0, block_n = 0;            // blocked: Y block of one invocation;
                                                       // rowdot: rows of a workgroup, columns of a subgroup pass
    std::uint32_t column_groups = 0;                   // rowdot: groups of block_n columns per workgroup
    std::uint32_t subgroup_size = 0;                   // rowdot: the device's, as planned
    std::uint32_t blocks_per_step = 0;                 // quantized: blocks whose scales are read together
    bool wide_loads = false;                           // rowdot and blocked: 64-bit components (shaderInt64)
    bool int_dot = false;                              // quantized blocked on int8 X (MatmulOptions::int8_activations)
    bool f16_arithmetic = false;                       // fp16 inner products (MatmulArithmetic)
    // coopmat: the cooperative matrix (the device's shape), subgroups_m x subgroups_n subgroups
    // of subgroup_size, each owning frags_m x frags_n accumulators; tile_m, tile_n and tile_k
    // are the workgroup's Y tile and K step.
    struct CoopMatLayout {
        CoopMatShape shape;
        std::uint32_t subgroups_m = 0, subgroups_n = 0, frags_m = 0, frags_n = 0;
        bool emulated = false;  // the EMULATE variant (ComputeLimits::coopmat_emulated: tests)
    } coopmat;
    std::uint32_t workgroup_size = 0;
    std::uint32_t shared_bytes = 0;
    std::uint32_t n_splits = 1;  // K slices; > 1 adds the reduce pass
    // The kernel writes partial sums to scratch (even unsplit) and the reduce pass applies
    // bias, activation, clamp and residual: devices with fewer storage buffers per stage than
    // the fused epilogue binds (kSeparateEpilogueBindings). No scatter, no fused LayerNorm.
    bool separate_epilogue = false;
    std::uint32_t k_split = 0;         // K elements per slice
    std::uint32_t rows_per_piece = 0;  // rows of X and Y bound per dispatch
    std::uint32_t cols_per_piece = 0;  // rows of W (columns of Y) bound per dispatch
    std::uint64_t scratch_bytes = 0;
    std::uint64_t xq_scratch_bytes = 0;  // int_dot: quantized X of one row piece, at the start of scratch
    std::uint64_t loop_iterations = 0;   // per invocation, counted without unrolling (an upper bound)
    // The answers to MatmulOptions::scatter and x_norm. scatter: asked for, and the device
    // allows the storage buffers the SCATTER kernels bind (7 dense, 8 quantized; with a
    // fused LayerNorm 2 more). x_norm: asked for, the row-dot kernel of dense weights with
    // the fused epilogue and the storage buffers it binds, and rows short enough for it to
    // pay (k <= kLayerNormFusionMaxK) unless MatmulOptions::kernel was forced.
    bool scatter = false;
    bool x_norm = false;
    std::string describe() const;
};

// The fewest rows for which Auto takes the cooperative-matrix kernel under VKF_LIMITS coopmat
// (one row of 16 x 16 matrices; decoding rows keep the matrix-vector kernel). Forced, it runs
// any m: the tiles are padded with zeros.
inline constexpr std::uint32_t kCoopMatMinRows = 16;

// The longest rows whose LayerNorm a plan fuses when the kernel is chosen (MatmulPlan::x_norm).
// Each workgroup takes the row's statistics and each column group normalizes its X chunks
// again, so the cost grows with k while the dispatch it saves does not: on llvmpipe (2
// cores) a 24-layer hidden-64 BLOOM decoded in 8.9 ms of GPU time a token fused against 9.8
// ms unfused, BLOOM-560m (k = 1024) in 356 ms against 251 ms.
inline constexpr std::uint32_t kLayerNormFusionMaxK = 128;

// Throws vkf::Error when a forced kernel does not fit the device (or the weights' format),
// when one row of W or X is longer than maxStorageBufferRange, when quantized rows are
// not whole blocks (k % 32 != 0), or when the device allows fewer than
// kSeparateEpilogueBindings storage buffers per shader stage. Fused work asked for and not
// possible is refused in the plan's answers (scatter, x_norm), not thrown.
MatmulPlan plan_matmul(const MatmulDevice& device, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                       DType weight_dtype, MatmulOptions options = {}, QuantFormat quant = QuantFormat::None);

// Records exactly `plan` (from plan_matmul on this context's device) without planning again;
// args.options is not read. Throws vkf::Error where args do not match the plan: m, n, k,
// weight_dtype or quant differ, args.scatter is set and plan.scatter is not (or the other
// way round), likewise args.x_norm and plan.x_norm, or the scratch range is smaller than
// plan.scratch_bytes; and on bad tensors.
void record_matmul(Context& ctx, CommandList& list, const MatmulPlan& plan, const MatmulArgs& args);

}  // namespace vkf
