// Reads of block-quantized weights (host/quant/quant_format.hpp): a row is cut along k into
// blocks of 32 weights, each one fp16 scale and its values, read as 32-bit words
//   q8_0 (Q8_0)  8 words; byte i is element i, an int8; weight = value * scale.
//   q4_0 (Q4_0)  4 words; byte i holds element i in its low nibble and element i + 16 in its
//                high nibble; weight = (nibble - 8) * scale.
// Every decode is exact: small integers as floats, times an fp16 scale in fp32.
#ifndef VKF_QUANT_IO_GLSL
#define VKF_QUANT_IO_GLSL

#if defined(Q8_0)
const uint QUANT_BLOCK_WORDS = 8u;
#elif defined(Q4_0)
const uint QUANT_BLOCK_WORDS = 4u;
#else
#error "quant_io.glsl needs Q8_0 or Q4_0"
#endif

// Scale i of a scales plane (fp16 pairs in 32-bit words), as the weights' element reads.
float quant_half(uint word, uint i) {
    const vec2 pair = unpackHalf2x16(word);
    return (i & 1u) != 0u ? pair.y : pair.x;
}
#define VKF_LOAD_SCALE(buf, i) quant_half(buf[(i) >> 1u], (i))

// q8_0: elements 4c .. 4c + 3 of a block from its word c. The arithmetic shifts
// sign-extend each byte: two shifts or one per element, no masks.
vec4 q8_decode(uint w) {
    const int s = int(w);
    return vec4(ivec4(s << 24, s << 16, s << 8, s) >> 24);
}

// q4_0: the nibbles of word c, elements 4c .. 4c + 3 (lo) and 4c + 16 .. 4c + 19 (hi),
// still offset by 8: the kernels subtract 8 * (sum of X over the block) once per block
// instead of 8 from every weight.
// Converted as signed integers: x86 has no unsigned vector conversion, and llvmpipe's
// unsigned one takes several instructions per element.
vec4 q4_decode_lo(uint w) {
    return vec4((ivec4(w) >> ivec4(0, 8, 16, 24)) & 0xF);
}
vec4 q4_decode_hi(uint w) {
    return vec4((ivec4(w) >> ivec4(4, 12, 20, 28)) & 0xF);
}

// Element e (0 .. 31) of a block, one at a time (the embedding lookup): the index of the
// word holding it within the block, and its value (before the scale) from that word.
uint quant_word_of(uint e) {
#if defined(Q8_0)
    return e >> 2u;
#else
    return (e & 15u) >> 2u;
#endif
}
float quant_value(uint w, uint e) {
#if defined(Q8_0)
    return float(bitfieldExtract(int(w), int(8u * (e & 3u)), 8));
#else
    return float(int(bitfieldExtract(w, int(8u * (e & 3u) + 4u * (e >> 4u)), 4)) - 8);
#endif
}

#endif
