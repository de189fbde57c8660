// The block arithmetic of matmul_quant.comp's float kernels (ROWDOT and BLOCKED), fp32 or
// fp16 (F16_MATH), behind one set of names the kernels use:
//   QVEC                 the type X and decoded values are held in: vec4 or f16vec4
//   decode_lo, decode_hi a block's values (see below), as QVEC
//   block_offset         what q4_0's offset of 8 costs, to subtract from a block's sum
//   QSUM8(xl, l, xh, h)  8 products of X and values summed, as an fp32 float
//   QUANT_SCALE(s)       the fp32 multiplier of a block's sum: its scale s, times what the
//                        fp16 values were scaled by
// fp16: the values are decoded exactly (small integers) and scaled by a power of two into
// [-1, 1] (q8_0: / 128; q4_0: (nibble - 8) / 8, so no offset is taken later, which would
// cancel in fp16), so every product is at most |x| in size and 8 of them (QSUM8, the fp16
// partial added in fp32) at most 8 max|x|: X up to 8188 cannot overflow the partial. The
// rounding error of a block is that of fp16 sums of 8 products (docs/DESIGN.md); its scale
// (times 128 or 8, exact) and the sum across blocks are fp32.
// Included by matmul_quant.comp after load_w4.
#ifndef VKF_MATMUL_QUANT_MATH_GLSL
#define VKF_MATMUL_QUANT_MATH_GLSL

#if defined(F16_MATH)
#define QVEC f16vec4
#define QSUM8(xl, l, xh, h) float(dot(xl, l) + dot(xh, h))
#if defined(Q8_0)
#define QUANT_SCALE(s) ((s) * 128.0)
#else
#define QUANT_SCALE(s) ((s) * 8.0)
#endif
// Element values of q8_decode / 128 and of (q4 nibble - 8) / 8: exact in fp16.
f16vec4 q8_decode_h(uint w) {
    const int s = int(w);
    return f16vec4(ivec4(s << 24, s << 16, s << 8, s) >> 24) * float16_t(1.0 / 128.0);
}
f16vec4 q4_decode_h(uint w, uint shift) {
    return f16vec4(((ivec4(w) >> (ivec4(0, 8, 16, 24) + int(shift))) & 0xF) - 8) * float16_t(0.125);
}
#else
#define QVEC vec4
#define QSUM8(xl, l, xh, h) (dot(xl, l) + dot(xh, h))
#define QUANT_SCALE(s) (s)
#endif

// A block as the kernels hold it: `a` its first four words and `b` the next four (q8_0
// only). Word c of `a` (q8_0 and q4_0 alike) holds elements 4c .. 4c + 3 of the block and
// the elements 16 + 4c .. 16 + 4c + 3 are in word c of `b` (q8_0) or in the high nibbles of
// word c of `a` (q4_0); X is held in the same order, lo[c] and hi[c].
QVEC decode_lo(uvec4 a, uvec4 b, uint c) {
#if defined(F16_MATH) && defined(Q8_0)
    return q8_decode_h(a[c]);
#elif defined(F16_MATH)
    return q4_decode_h(a[c], 0u);
#elif defined(Q8_0)
    return q8_decode(a[c]);
#else
    return q4_decode_lo(a[c]);
#endif
}
QVEC decode_hi(uvec4 a, uvec4 b, uint c) {
#if defined(F16_MATH) && defined(Q8_0)
    return q8_decode_h(b[c]);
#elif defined(F16_MATH)
    return q4_decode_h(a[c], 4u);
#elif defined(Q8_0)
    return q8_decode(b[c]);
#else
    return q4_decode_hi(a[c]);
#endif
}

void load_block(uint word, out uvec4 a, out uvec4 b) {
    a = load_w4(word);
#if defined(Q8_0)
    b = load_w4(word + 4u);
#else
    b = uvec4(0u);
#endif
}

// What the values of a block are offset by, times the block's sum of X (lo and hi as the
// block is held): 0 for q8_0 and for fp16 values (decoded without offset), 8 * sum for q4_0.
float block_offset(QVEC lo[4], QVEC hi[4]) {
#if defined(Q8_0) || defined(F16_MATH)
    return 0.0;
#else
    const vec4 s = ((lo[0] + hi[0]) + (lo[1] + hi[1])) + ((lo[2] + hi[2]) + (lo[3] + hi[3]));
    return 8.0 * dot(s, vec4(1.0));
#endif
}

#endif
