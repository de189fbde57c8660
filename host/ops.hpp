#pragma once
// The kernels of a transformer block besides attention, as record_* functions that add
// dispatches to a CommandList: matmul with a fused epilogue, LayerNorm, GELU, residual add,
// embedding lookup and KV-cache append. Tensors are passed as BufferRanges holding exactly
// the tensor (row-major, innermost last); a range may start at any multiple of its element
// size, and tensors larger than maxStorageBufferRange are bound in pieces by the op itself.
// Activations are fp32; weights and tables fp32 or fp16; arithmetic is fp32.
// Sizes are checked: a wrong range throws vkf::Error naming the op, the tensor and its shape.
// The ranges (and the scratch) must stay alive until the command list has run.

#include "host/attention.hpp" // DType
#include "host/elementwise.hpp" // record_add: the residual add, dst = a + b
#include "runtime/context.hpp"

#include <cstdint>

namespace vkf {

// Applied after the bias; the matmul epilogue and record_activation share it.
enum class Activation : std::uint32_t { None = 0, GeluTanh = 1, GeluErf = 2 };
const char* to_string(Activation a);

// --- matmul: Y[m, n] = act(X[m, k] . W[n, k]^T + bias[n]) + residual[m, n] ---

// Tiled (shared-memory tiles, GPUs' prefill), Gemv (workgroup per few outputs, GPUs'
// decode), Blocked (register blocks without shared memory: CPU devices and the fallback),
// RowDot (subgroup lanes along K with 16-byte loads: CPU devices' decode; needs subgroup
// arithmetic).
enum class MatmulKernel : std::uint32_t { Auto = 0, Tiled, Gemv, Blocked, RowDot };
const char* to_string(MatmulKernel k);

struct MatmulOptions {
    MatmulKernel kernel = MatmulKernel::Auto; // tests force each kernel
    // 0: chosen; n: at least n K slices (split-K), and none added for parallelism (slices
    // the driver's loop limit needs are always added).
    std::uint32_t force_splits = 0;
};

struct MatmulArgs {
    BufferRange x;        // [m, k] fp32
    BufferRange w;        // [n, k] weight_dtype (PyTorch's Linear.weight layout)
    BufferRange bias;     // [n] weight_dtype, or no buffer
    BufferRange residual; // [m, n] fp32 added last, or no buffer; may be the same range as y
    BufferRange y;        // [m, n] fp32, not overlapping x, w or bias
    BufferRange scratch;  // split-K partial sums: matmul_scratch_bytes() bytes, unused when that is 0
    std::uint32_t m = 0, n = 0, k = 0;
    DType weight_dtype = DType::F32;
    Activation activation = Activation::None;
    MatmulOptions options;
};

void record_matmul(Context& ctx, CommandList& list, const MatmulArgs& args);
// Bytes of scratch record_matmul needs for this shape on this device (0: none). The plan
// splits K for long reductions on drivers with a loop limit and for parallelism when the
// output is small.
std::uint64_t matmul_scratch_bytes(const Context& ctx, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                                   DType weight_dtype, MatmulOptions options = {});

// --- LayerNorm over the last dimension ---

struct LayerNormArgs {
    BufferRange x;      // [rows, dim] fp32
    BufferRange weight; // [dim] weight_dtype
    BufferRange bias;   // [dim] weight_dtype, or no buffer (MPT's no_bias)
    BufferRange y;      // [rows, dim] fp32; may be the same range as x
    std::uint32_t rows = 0, dim = 0;
    float eps = 1e-5f;
    DType weight_dtype = DType::F32;
};

void record_layernorm(Context& ctx, CommandList& list, const LayerNormArgs& args);

// --- elementwise activations (fp32; dst may be the same range as src) ---

void record_activation(Context& ctx, CommandList& list, Activation activation, BufferRange src, BufferRange dst);
// dst = clamp(src, -bound, bound): MPT's clip_qkv. bound > 0.
void record_clamp(Context& ctx, CommandList& list, BufferRange src, BufferRange dst, float bound);
// erf itself, the one the GELU erf form uses (GLSL has none): for tests and tools.
void record_erf(Context& ctx, CommandList& list, BufferRange src, BufferRange dst);

// --- embedding lookup: out[t, :] = table[ids[t], :]; ids >= vocab give zeros ---

struct EmbeddingArgs {
    BufferRange ids;   // [tokens] uint32
    BufferRange table; // [vocab, hidden] table_dtype; may exceed maxStorageBufferRange
    BufferRange out;   // [tokens, hidden] fp32
    std::uint32_t tokens = 0, vocab = 0, hidden = 0;
    DType table_dtype = DType::F32;
};

void record_embedding(Context& ctx, CommandList& list, const EmbeddingArgs& args);

// --- KV-cache append ---

// Where element (b, t, h, d) of the new rows sits in the fp32 source range, in elements:
// offset + b * batch_stride + t * token_stride + h * head_stride + d.
struct HeadLayout {
    std::uint64_t offset = 0;
    std::uint64_t batch_stride = 0;
    std::uint64_t token_stride = 0;
    std::uint64_t head_stride = 0;
    // A dense [batch, len, heads, head_dim] tensor.
    static HeadLayout dense(std::uint32_t len, std::uint32_t heads, std::uint32_t head_dim);
};

struct KvAppendArgs {
    BufferRange src;   // fp32, read through src_layout (e.g. the K part of a fused QKV output)
    HeadLayout src_layout;
    BufferRange cache; // [batch, max_len, n_kv_head, head_dim] cache_dtype
    std::uint32_t batch = 0, new_len = 0, n_kv_head = 0, head_dim = 0; // head_dim even
    std::uint32_t max_len = 0;
    std::uint32_t pos = 0; // first cache row written; pos + new_len <= max_len
    DType cache_dtype = DType::F32;
};

// Writes cache rows pos..pos+new_len-1 of every batch. With max_len = new_len and pos = 0
// it repacks strided heads densely (Q out of a fused QKV output, for attention).
void record_kv_append(Context& ctx, CommandList& list, const KvAppendArgs& args);

} // namespace vkf
