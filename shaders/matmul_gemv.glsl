// The GEMV kernels of matmul.comp (see there): few rows of X (decoding), a workgroup owns 4
// columns of one row of Y, its invocations split K and add their partial sums in shared
// memory. Included by matmul.comp after its bindings, load_w and the epilogue.
//   GEMV      fp32 arithmetic; pairs of elements a step where W rows start on pairs.
//   GEMV_F16  fp16 arithmetic on fp16 weights (needs shaderFloat16): an invocation takes K in
//             chunks of 8 (kF16FoldProducts) and multiply-adds each chunk's 8 products of a
//             column in fp16, then adds that partial to its fp32 accumulator: the fp16 error
//             and range are those of 8 products (docs/DESIGN.md), the sums across chunks and
//             invocations and the epilogue fp32. Where rows line up (VKF_MATMUL_FLAG_VEC8) a
//             chunk is one 16-byte load of W per column (8 halves, consecutive invocations on
//             consecutive 16 bytes: coalesced) and two of X, and its products are 4 packed
//             f16vec2 multiply-adds a column; elsewhere (odd k or unaligned tensors) the same
//             chunks are read element by element into f16vec4s across the 4 columns.
#ifndef VKF_MATMUL_GEMV_GLSL
#define VKF_MATMUL_GEMV_GLSL

layout(constant_id = VKF_MATMUL_SPEC_WG) const uint WG = 64; // == local_size_x, a power of two
shared vec4 sums[WG];

#if defined(GEMV_F16)
// 16-byte views of X and W (the same bindings), read only where the flags say rows line up:
// k % 8 == 0, x_base % 4 == 0, w_base % 8 == 0, and K slices start on 8 elements.
layout(std430, binding = VKF_MATMUL_BINDING_X) readonly buffer XV { vec4 xv_data[]; };  // 4 floats
layout(std430, binding = VKF_MATMUL_BINDING_W) readonly buffer WV { uvec4 wv_data[]; }; // 8 halves
const uint FOLD = 8u; // == kF16FoldProducts (host/ops/matmul.hpp)

// One column's 8 products in fp16 (two lanes of 4 fused multiply-adds), added in fp32.
float fold8(f16vec2 x0, f16vec2 x1, f16vec2 x2, f16vec2 x3, uvec4 w) {
    f16vec2 h = x0 * unpackFloat2x16(w.x);
    h = fma(x1, unpackFloat2x16(w.y), h);
    h = fma(x2, unpackFloat2x16(w.z), h);
    h = fma(x3, unpackFloat2x16(w.w), h);
    return float(h.x) + float(h.y);
}

vec4 gemv_sums(uint tid, uint x_row, uvec4 w_row, uint k_begin, uint k_end) {
    vec4 acc = vec4(0.0);
    if ((params.flags & VKF_MATMUL_FLAG_VEC8) != 0u) {
        for (uint kk = k_begin + FOLD * tid; kk < k_end; kk += FOLD * WG) {
            const uint xe = (x_row + kk) >> 2u;
            const vec4 x_lo = xv_data[xe];
            const vec4 x_hi = xv_data[xe + 1u];
            const f16vec2 x0 = f16vec2(x_lo.xy), x1 = f16vec2(x_lo.zw);
            const f16vec2 x2 = f16vec2(x_hi.xy), x3 = f16vec2(x_hi.zw);
            acc.x += fold8(x0, x1, x2, x3, wv_data[(w_row.x + kk) >> 3u]);
            acc.y += fold8(x0, x1, x2, x3, wv_data[(w_row.y + kk) >> 3u]);
            acc.z += fold8(x0, x1, x2, x3, wv_data[(w_row.z + kk) >> 3u]);
            acc.w += fold8(x0, x1, x2, x3, wv_data[(w_row.w + kk) >> 3u]);
        }
    } else {
        for (uint kk = k_begin + FOLD * tid; kk < k_end; kk += FOLD * WG) {
            f16vec4 h = f16vec4(0.0hf);
            [[unroll]] for (uint e = 0u; e < FOLD; ++e) {
                const uint i = kk + e;
                if (i < k_end) {
                    const vec4 w = vec4(VKF_LOAD_WEIGHT(w_data, w_row.x + i), VKF_LOAD_WEIGHT(w_data, w_row.y + i),
                                        VKF_LOAD_WEIGHT(w_data, w_row.z + i), VKF_LOAD_WEIGHT(w_data, w_row.w + i));
                    h = fma(f16vec4(float16_t(x_data[x_row + i])), f16vec4(w), h);
                }
            }
            acc += vec4(h);
        }
    }
    return acc;
}

#else

vec4 gemv_sums(uint tid, uint x_row, uvec4 w_row, uint k_begin, uint k_end) {
    vec4 acc = vec4(0.0);
    if ((params.flags & VKF_MATMUL_FLAG_PAIRS) != 0u) {
        // k_begin is even (the host makes k_split even); every W row starts on a pair.
        for (uint kk = k_begin + 2u * tid; kk < k_end; kk += 2u * WG) {
            const vec2 xv = vec2(x_data[x_row + kk], x_data[x_row + kk + 1u]);
#if defined(WEIGHTS_F16)
            acc.x += dot(xv, unpackHalf2x16(w_data[(w_row.x + kk) >> 1u]));
            acc.y += dot(xv, unpackHalf2x16(w_data[(w_row.y + kk) >> 1u]));
            acc.z += dot(xv, unpackHalf2x16(w_data[(w_row.z + kk) >> 1u]));
            acc.w += dot(xv, unpackHalf2x16(w_data[(w_row.w + kk) >> 1u]));
#else
            acc.x += dot(xv, vec2(w_data[w_row.x + kk], w_data[w_row.x + kk + 1u]));
            acc.y += dot(xv, vec2(w_data[w_row.y + kk], w_data[w_row.y + kk + 1u]));
            acc.z += dot(xv, vec2(w_data[w_row.z + kk], w_data[w_row.z + kk + 1u]));
            acc.w += dot(xv, vec2(w_data[w_row.w + kk], w_data[w_row.w + kk + 1u]));
#endif
        }
    } else {
        for (uint kk = k_begin + tid; kk < k_end; kk += WG) {
            const float xv = x_data[x_row + kk];
            acc += xv * vec4(VKF_LOAD_WEIGHT(w_data, w_row.x + kk), VKF_LOAD_WEIGHT(w_data, w_row.y + kk),
                             VKF_LOAD_WEIGHT(w_data, w_row.z + kk), VKF_LOAD_WEIGHT(w_data, w_row.w + kk));
        }
    }
    return acc;
}

#endif

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint col0 = gl_WorkGroupID.x * 4u;
    const uint row = gl_WorkGroupID.y;
    const uint k_begin = gl_WorkGroupID.z * params.k_split;
    const uint k_end = min(params.k, k_begin + params.k_split);
    // Columns past n read the last column (in bounds); their sums are never stored.
    const uint last = params.n - 1u;
    const uvec4 w_row = params.w_base + uvec4(min(col0, last), min(col0 + 1u, last), min(col0 + 2u, last),
                                              min(col0 + 3u, last)) * params.k;
    const uint x_row = params.x_base + row * params.k;

    sums[tid] = gemv_sums(tid, x_row, w_row, k_begin, k_end);
    barrier();
    for (uint stride = WG / 2u; stride > 0u; stride /= 2u) {
        if (tid < stride) {
            sums[tid] += sums[tid + stride];
        }
        barrier();
    }
    if (tid == 0u) {
        store_quad(row, col0, sums[0]);
    }
}

#endif
