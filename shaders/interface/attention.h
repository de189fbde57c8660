// The interface of the attention kernels (shaders/attention.comp, attention_rows.comp,
// attention_combine.comp, attention_naive.comp) with host/ops/attention.cpp and
// attention_naive.cpp: all four take the same push-constant block. See interface.h.
#ifndef VKF_INTERFACE_ATTENTION_H
#define VKF_INTERFACE_ATTENTION_H

#include "interface.h"

// params.flags (conventions: host/spec/attention_params.hpp)
#define VKF_ATTN_FLAG_CAUSAL_MASK 1u
#define VKF_ATTN_FLAG_SLOPE_TABLE 2u  // per-head slopes from a buffer instead of the formula
#define VKF_ATTN_FLAG_KV_LENS 4u      // per-batch valid key counts from a buffer
#define VKF_ATTN_FLAG_ALIBI_CAUSAL 8u
#define VKF_ATTN_FLAG_ALIBI_SYMMETRIC 16u
// Split-KV with key counts from the kv_lens buffer (a recorded list re-submitted as the
// sequence grows): each split takes ceil(L / n_splits) keys rounded up to the kernel's key
// block, at most kv_split_len, so that the work stays spread over the splits at any length.
#define VKF_ATTN_FLAG_SPLIT_BY_LENGTH 32u
// With ALIBI_CAUSAL, Falcon's form: bf16(slope * key position) added to q.k before the scale.
#define VKF_ATTN_FLAG_ALIBI_KEY_BF16 64u
// Jais' dynamic alibi_scaling: slopes times alibi_train_len / L once L keys exceed it.
#define VKF_ATTN_FLAG_ALIBI_DYNAMIC 128u
// Paged, ragged batches (host/ops/attention.hpp, PagedKv): K and V are a pool of blocks of
// block_size keys, Q and O packed rows; each sequence's key count, rows and block table come
// from the sequence table in the kv_lens binding (laid out as below). Implies KV_LENS.
#define VKF_ATTN_FLAG_PAGED 256u

// The sequence table of a paged batch of `batch` sequences, in uint32 words: the key counts
// first (so that it is also a kv_lens array), then the first rows, the row counts, and one
// block table of blocks_per_seq entries per sequence.
#define VKF_ATTN_SEQ_KV_LEN(batch, b) (b)
#define VKF_ATTN_SEQ_Q_START(batch, b) ((batch) + (b))
#define VKF_ATTN_SEQ_Q_LEN(batch, b) (2u * (batch) + (b))
#define VKF_ATTN_SEQ_BLOCK(batch, blocks_per_seq, b, i) (3u * (batch) + (b) * (blocks_per_seq) + (i))
#define VKF_ATTN_SEQ_WORDS(batch, blocks_per_seq) ((batch) * (3u + (blocks_per_seq)))

// Specialization constants (0-2: the workgroup size).
#define VKF_ATTN_SPEC_D 6  // head_dim, in every attention kernel that needs it
// attention.comp (tiled)
#define VKF_ATTN_SPEC_BR 3   // query rows per workgroup
#define VKF_ATTN_SPEC_BC 4   // keys per shared tile
#define VKF_ATTN_SPEC_TPR 5  // invocations per query row
// SUBGROUP_ANY_SIZE, tests only: the path its in-shader check must choose (a workgroup that
// takes the other writes nothing); EITHER: whichever the check says (what the op sets).
#define VKF_ATTN_SPEC_SG_EXPECT 7
#define VKF_ATTN_SG_EXPECT_EITHER 0u
#define VKF_ATTN_SG_EXPECT_SUBGROUP 1u
#define VKF_ATTN_SG_EXPECT_SHARED 2u
// attention_rows.comp
#define VKF_ATTN_ROWS_SPEC_SPLIT_LANES 3  // invocations per row, each its own KV split
#define VKF_ATTN_ROWS_SPEC_BK 4           // keys per softmax update
#define VKF_ATTN_ROWS_SPEC_R 5            // query rows per invocation
#define VKF_ATTN_ROWS_SPEC_SG 7           // SUBGROUP_LOADS: the subgroup size
// KV_QUANT variants (every kernel that reads K or V): their storage, VKF_KV_FORMAT_*
// (interface/kv_quant.h, shaders/kv_quant.glsl)
#define VKF_ATTN_SPEC_K_FORMAT 8
#define VKF_ATTN_SPEC_V_FORMAT 9

#define VKF_ATTENTION_PUSH(F)                                             \
    F(uint, batch)                                                        \
    F(uint, q_len)                                                        \
    F(uint, kv_len)                                                       \
    F(uint, n_head)                                                       \
    F(uint, n_kv_head)                                                    \
    F(uint, flags) /* VKF_ATTN_FLAG_* */                                  \
    F(float, scale)                                                       \
    F(float, max_bias)                                                    \
    F(uint, alibi_pow2)      /* largest power of two <= n_head */         \
    F(uint, kv_split_len)    /* keys per split (split-KV), else kv_len */ \
    F(uint, n_splits)        /* 1 without split-KV */                     \
    F(uint, alibi_train_len) /* VKF_ATTN_FLAG_ALIBI_DYNAMIC */            \
    F(uint, block_size)      /* VKF_ATTN_FLAG_PAGED: keys per block */    \
    F(uint, blocks_per_seq)  /* entries of a sequence's block table */    \
    F(uint, q_rows)          /* rows of Q and O */                        \
    F(uint, pool_blocks)     /* blocks in K and V (block ids clamped) */  \
    F(uint, window)          /* key window W, 0: full (attention_io.glsl) */
VKF_PUSH_CONSTANTS(AttentionParams, AttentionPush, VKF_ATTENTION_PUSH)

#endif
