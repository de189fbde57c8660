// The block-quantized KV cache (q8_0, q4_0 K or V) as the attention kernels read it and
// kv_append writes it, shared with host/quant/kv_quant.cpp. See interface.h.
//
// The cache keeps its [rows, n_kv_head, head_dim] order with one "key row" (the n_kv_head *
// head_dim values of one key or value of every KV head) as a run of 32-bit words: first the
// fp16 scales of all its blocks of 32 values, two per word (the low half the even block's,
// the last word's high half zero when the row has an odd number of blocks), then the
// blocks' values, in the byte order of ggml's block_q8_0 / block_q4_0 qs[]
// (host/quant/quant_format.hpp):
//   q8_0  32 int8 per block (8 words); value = scale * q
//   q4_0  16 bytes per block (4 words), byte i holding element i in its low nibble and
//         element i + 16 in its high nibble; value = scale * (nibble - 8)
// Block i of a key row is block i % (head_dim / 32) of head i / (head_dim / 32). Sharing
// the scale words among the heads of a key keeps the padding to half a word per key (none
// when n_kv_head * head_dim / 32 is even): 34 of f16's 64 bytes per 32 values for q8_0, 18
// for q4_0. Scales sit in their key row so that a paged pool stays a whole number of blocks
// of keys and copy-on-write copies bytes; head_dim must be a multiple of 32.
#ifndef VKF_INTERFACE_KV_QUANT_H
#define VKF_INTERFACE_KV_QUANT_H

// Macros only (no push constants): host/quant reads it without the runtime.

// The storage of K or V in the KV_QUANT kernel variants (a specialization constant each):
// F16 (two halves per word, as KV_F16) or one of the block formats. The same values as
// vkf::QuantFormat (None = F16 here).
#define VKF_KV_FORMAT_F16 0u
#define VKF_KV_FORMAT_Q8_0 1u
#define VKF_KV_FORMAT_Q4_0 2u

#define VKF_KV_QUANT_BLOCK 32u
// Scale words of a key row of d values (n_kv_head * head_dim, a multiple of 32).
#define VKF_KV_SCALE_WORDS(d) (((d) / VKF_KV_QUANT_BLOCK + 1u) / 2u)
// Words of one key row of d values in format f.
#define VKF_KV_ROW_WORDS(f, d)                                      \
    ((f) == VKF_KV_FORMAT_Q8_0   ? VKF_KV_SCALE_WORDS(d) + (d) / 4u \
     : (f) == VKF_KV_FORMAT_Q4_0 ? VKF_KV_SCALE_WORDS(d) + (d) / 8u \
                                 : (d) / 2u)

#endif
