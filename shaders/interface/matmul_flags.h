// The flag bits of params.flags shared by the matmul kernel families (interface/matmul.h,
// interface/matmul_quant.h): the epilogue and split-K bits read by matmul_epilogue.glsl,
// and the dense kernels' own. See interface.h.
#ifndef VKF_INTERFACE_MATMUL_FLAGS_H
#define VKF_INTERFACE_MATMUL_FLAGS_H

#define VKF_MATMUL_FLAG_BIAS 1u
#define VKF_MATMUL_FLAG_RESIDUAL 2u
#define VKF_MATMUL_FLAG_GELU_TANH 4u
#define VKF_MATMUL_FLAG_GELU_ERF 8u
#define VKF_MATMUL_FLAG_PARTIALS 16u  // split-K: raw sums of the K slice instead of Y
#define VKF_MATMUL_FLAG_PAIRS 32u     // k and w_base even: W rows start on pairs (GEMV, BLOCKED)
// ROWDOT, GEMV_F16: rows of X and W start on the vector views' elements: k % 8 == 0,
// x_base % 4 == 0, w_base % 8 (fp32: 4) == 0; and for VEC16 (ROWDOT WIDE64) k % 16 == 0,
// w_base % 16 (fp32: 8) == 0.
#define VKF_MATMUL_FLAG_VEC8 64u
#define VKF_MATMUL_FLAG_VEC16 128u
// Every epilogue: clamp to [-clamp_to, clamp_to] after bias and activation (MPT's clip_qkv).
#define VKF_MATMUL_FLAG_CLAMP 256u
// SCATTER variants (a fused QKV projection's epilogue): the output columns are BLOOM's
// [n_head, 3, head_dim] per token when set, else [q | k | v] blocks of q_heads and kv_heads
// heads; the KV cache is fp16 when VKF_MATMUL_FLAG_CACHE_F16 is set, else fp32.
#define VKF_MATMUL_FLAG_SCATTER_INTERLEAVED 512u
#define VKF_MATMUL_FLAG_CACHE_F16 1024u
// LN_X variants: the LayerNorm of X has a bias.
#define VKF_MATMUL_FLAG_LN_BIAS 2048u

// The push-constant members every matmul kernel family appends to its block: the clamp
// bound and the SCATTER epilogue's geometry. A SCATTER kernel writes the Q columns of its
// output to Y as [rows, q_heads, head_dim] and the K and V columns of output row r into
// cache row slots[r] of the caches ([cache_rows, kv_heads, head_dim]); the slots (uint32,
// bound where the residual is, from res_base) are written by the host before each
// submission, so one recorded command list serves every decoding step, and the rows of one
// step may belong to different sequences (a paged cache's slot = block * block_size +
// offset). A slot >= cache_rows writes nothing. Zero where unused.
// head_dim is not a member: the SCATTER variants take it as a specialization constant, so
// that finding an output column's head is a multiply, not a division (llvmpipe runs integer
// division per lane).
#define VKF_MATMUL_SPEC_SCATTER_HEAD_DIM 8

#define VKF_MATMUL_EPILOGUE_PUSH(F)                                       \
    F(uint, row0) /* the dispatch's first row and column in the output */ \
    F(uint, col0)                                                         \
    F(uint, cache_rows) /* SCATTER: rows each cache holds */              \
    F(uint, q_heads)                                                      \
    F(uint, kv_heads)                                                     \
    F(float, clamp_to)                                                    \
    F(float, ln_eps) /* LN_X variants: the LayerNorm's epsilon */

#endif
