// Tensor storage for the attention kernels, kept apart from their fp32 arithmetic.
// Q, K, V and O are read and written as pairs of elements (head_dim is always even):
// fp32 storage as vec2, fp16 storage as one uint holding two halves, unpacked with
// unpackHalf2x16, which is core GLSL: fp16 tensors need no 16-bit storage feature.
#ifndef VKF_ATTENTION_IO_GLSL
#define VKF_ATTENTION_IO_GLSL

#if defined(STORAGE_F16)
#define VKF_PAIR uint
vec2 pair_to_vec2(uint w) { return unpackHalf2x16(w); }
uint vec2_to_pair(vec2 v) { return packHalf2x16(v); }
#else
#define VKF_PAIR vec2
vec2 pair_to_vec2(vec2 w) { return w; }
vec2 vec2_to_pair(vec2 v) { return v; }
#endif

#endif
