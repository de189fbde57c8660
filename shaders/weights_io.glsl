// Element reads of weight and table tensors, kept apart from their fp32 arithmetic.
// fp32 storage is a float[] array; fp16 storage (WEIGHTS_F16) is a uint[] array of packed
// pairs unpacked with unpackHalf2x16, which is core GLSL: no 16-bit storage feature needed.
// Element i of an fp16 tensor is half (i & 1) of word i / 2, so tensors of any length and
// any (even or odd) first element can be read.
#ifndef VKF_WEIGHTS_IO_GLSL
#define VKF_WEIGHTS_IO_GLSL

#if defined(WEIGHTS_F16)
#define VKF_WEIGHT uint
float half_of_word(uint word, uint i) {
    const vec2 pair = unpackHalf2x16(word);
    return (i & 1u) != 0u ? pair.y : pair.x;
}
// Element i of the weight array `buf`.
#define VKF_LOAD_WEIGHT(buf, i) half_of_word(buf[(i) >> 1u], (i))
#else
#define VKF_WEIGHT float
#define VKF_LOAD_WEIGHT(buf, i) (buf[(i)])
#endif

#endif
