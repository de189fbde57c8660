// Reads of ggml's K-quant super-blocks (host/quant/kquant_format.hpp, docs/QUANTIZATION.md)
// as a GGUF file stores them: 256 weights per super-block of 84 (Q2_K), 110 (Q3_K), 144
// (Q4_K), 176 (Q5_K) or 210 (Q6_K) bytes, rows of super-blocks one after the other; and of
// ggml's 32-weight blocks Q4_1 (20 bytes), Q5_0 (22) and Q5_1 (24) (KQ_LEGACY), read alike.
// A Q6_K or Q5_0 block is not a whole number of 32-bit words, so every read here is by byte
// address: KQ_WORD(byte) gives the 4 bytes from any byte (two words and a funnel shift where
// it is not aligned).
// The including shader defines KQ_DATA, its uint[] array of super-blocks, and may define
// KQ_HEAD_DATA, another view of the same blocks through which their scales are read.
#ifndef VKF_KQUANT_IO_GLSL
#define VKF_KQUANT_IO_GLSL

#if defined(Q2_K)
const uint KQ_BLOCK_BYTES = 84u;
#elif defined(Q3_K)
const uint KQ_BLOCK_BYTES = 110u;
#elif defined(Q4_K)
const uint KQ_BLOCK_BYTES = 144u;
#elif defined(Q5_K)
const uint KQ_BLOCK_BYTES = 176u;
#elif defined(Q6_K)
const uint KQ_BLOCK_BYTES = 210u;
#elif defined(Q4_1)
const uint KQ_BLOCK_BYTES = 20u;
#elif defined(Q5_0)
const uint KQ_BLOCK_BYTES = 22u;
#elif defined(Q5_1)
const uint KQ_BLOCK_BYTES = 24u;
#else
#error "kquant_io.glsl needs Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q4_1, Q5_0 or Q5_1"
#endif

#if defined(Q4_1) || defined(Q5_0) || defined(Q5_1)
// fp16 d at byte 0 (and m at 2: Q4_1, Q5_1); Q5_*'s fifth bits qh (bit e: element e) at
// KQ_QH_AT; qs[16] at KQ_QS_AT, element l (0..15) in the low nibble of qs[l], l + 16 in the high.
#define KQ_LEGACY
const uint KQ_BLOCK_WEIGHTS = 32u;
#if defined(Q5_0)
const uint KQ_QH_AT = 2u;
#else
const uint KQ_QH_AT = 4u;
#endif
#if defined(Q4_1)
const uint KQ_QS_AT = 4u;
#else
const uint KQ_QS_AT = KQ_QH_AT + 4u;
#endif
#else
const uint KQ_BLOCK_WEIGHTS = 256u;
#endif

#if !defined(KQ_HEAD_DATA)
#define KQ_HEAD_DATA KQ_DATA
#endif

// Bytes b .. b + 3 of `buf` as a little-endian word. The second word is read from within
// the array (clamped) so the last word of a binding never reads past it.
#define KQ_WORD_READER(name, buf)                                \
    uint name(uint b) {                                          \
        const uint i = b >> 2u;                                  \
        const uint s = 8u * (b & 3u);                            \
        const uint lo = buf[i];                                  \
        const uint hi = buf[min(i + 1u, uint(buf.length()) - 1u)]; \
        return s == 0u ? lo : (lo >> s) | (hi << (32u - s));     \
    }
#if defined(KQ_ALIGNED)
// The host saw every block start on 4 bytes (a block a whole number of words, the rows'
// first byte on a word): one load a word. On llvmpipe each load is a bounds-checked load per
// lane, so this halves the decoding kernels' reads.
uint kq_word(uint b) {
    return KQ_DATA[b >> 2u];
}
uint kq_head_word(uint b) {
    return KQ_HEAD_DATA[b >> 2u];
}
#else
KQ_WORD_READER(kq_word, KQ_DATA)       // the values
KQ_WORD_READER(kq_head_word, KQ_HEAD_DATA) // d, dmin and the sub-block scales
#endif

// The word at byte shift s (0, 8, 16, 24) of the word pair lo, hi: a run of words read from
// one block shares each load between two of its words (kq_word reads two per word).
uint kq_join(uint lo, uint hi, uint s) {
    return s == 0u ? lo : (lo >> s) | (hi << (32u - s));
}

// The four bytes of a word as integers.
ivec4 kq_bytes(uint w) {
    return (ivec4(w) >> ivec4(0, 8, 16, 24)) & 0xFF;
}

#if defined(Q4_K) || defined(Q5_K)
// A Q4_K / Q5_K super-block's sub-block multipliers: dl[j] = d * scale_j and ml[j] = dmin *
// min_j for its 8 sub-blocks of 32, with the 6-bit scales and mins unpacked from scales[12]
// (bytes 4..15): sub-blocks 0-3 in the low 6 bits of bytes 0-3 (scales) and 4-7 (mins),
// sub-blocks 4-7 in the nibbles of bytes 8-11 with their top 2 bits in the top 2 bits of
// bytes 0-7. Each product is exact in fp32 (an 11-bit significand times 6 bits).
void kq_multipliers(uint b, out vec4 dl_lo, out vec4 dl_hi, out vec4 ml_lo, out vec4 ml_hi) {
    const vec2 dm = unpackHalf2x16(kq_head_word(b));
    const ivec4 s0 = kq_bytes(kq_head_word(b + 4u));
    const ivec4 s1 = kq_bytes(kq_head_word(b + 8u));
    const ivec4 s2 = kq_bytes(kq_head_word(b + 12u));
    dl_lo = dm.x * vec4(s0 & 63);
    ml_lo = dm.y * vec4(s1 & 63);
    dl_hi = dm.x * vec4((s2 & 0xF) | ((s0 >> 6) << 4));
    ml_hi = dm.y * vec4((s2 >> 4) | ((s1 >> 6) << 4));
}
#endif

#if defined(Q2_K) || defined(Q3_K)
// Q2_K / Q3_K: the multiplier of each of the 16 sub-blocks of 16 and (Q2_K) its min:
// Q2_K's scales[16] (bytes 0-15) are a 4-bit scale (low nibble) and min (high nibble) each,
// times d and dmin (bytes 80, 82); Q3_K's scales[12] (bytes 96-107) are 16 6-bit scales, low
// 4 bits in nibbles of bytes 0-7 (sub-blocks 0-7 low, 8-15 high nibbles), top 2 bits in bit
// pair j / 4 of byte 8 + j % 4, less 32, times d (byte 108).
void kq_small_multipliers(uint b, out float dl[16], out float ml[16]) {
#if defined(Q2_K)
    const vec2 dm = unpackHalf2x16(kq_head_word(b + 80u));
    [[unroll]] for (uint t = 0u; t < 16u; t += 4u) {
        const ivec4 sc = kq_bytes(kq_head_word(b + t));
        [[unroll]] for (uint u = 0u; u < 4u; ++u) {
            dl[t + u] = dm.x * float(sc[u] & 0xF);
            ml[t + u] = dm.y * float(sc[u] >> 4);
        }
    }
#else
    const float d = unpackHalf2x16(kq_head_word(b + 108u)).x;
    const ivec4 lo0 = kq_bytes(kq_head_word(b + 96u));
    const ivec4 lo1 = kq_bytes(kq_head_word(b + 100u));
    const ivec4 hi = kq_bytes(kq_head_word(b + 104u));
    [[unroll]] for (uint u = 0u; u < 4u; ++u) {
        dl[u] = d * float(((lo0[u] & 0xF) | (((hi[u] >> 0) & 3) << 4)) - 32);
        dl[4u + u] = d * float(((lo1[u] & 0xF) | (((hi[u] >> 2) & 3) << 4)) - 32);
        dl[8u + u] = d * float(((lo0[u] >> 4) | (((hi[u] >> 4) & 3) << 4)) - 32);
        dl[12u + u] = d * float(((lo1[u] >> 4) | (((hi[u] >> 6) & 3) << 4)) - 32);
        ml[u] = 0.0;
        ml[4u + u] = 0.0;
        ml[8u + u] = 0.0;
        ml[12u + u] = 0.0;
    }
#endif
}
#endif

#endif
