// The BLOCKED kernel of matmul.comp (see there): each invocation owns an RM x RN block of Y
// and reads X and W directly, no shared memory. Included by matmul.comp after its bindings,
// load_w and the epilogue.
#ifndef VKF_MATMUL_BLOCKED_GLSL
#define VKF_MATMUL_BLOCKED_GLSL

#if defined(WIDE64)
// 64-bit views of X and W (the same bindings), read where the flags say rows line up: four
// elements of a row per component (fp32 W: two components).
layout(std430, binding = VKF_MATMUL_BINDING_X) readonly buffer XB { u64vec2 xb_data[]; }; // 4 floats
#if defined(WEIGHTS_F16)
layout(std430, binding = VKF_MATMUL_BINDING_W) readonly buffer WB { uint64_t wb_data[]; }; // 4 halves
#else
layout(std430, binding = VKF_MATMUL_BINDING_W) readonly buffer WB { u64vec2 wb_data[]; }; // 4 floats
#endif
#endif

layout(constant_id = VKF_MATMUL_SPEC_RM) const uint RM = 4;  // rows of Y per invocation
layout(constant_id = VKF_MATMUL_SPEC_RN) const uint RN = 16; // columns of Y per invocation, a multiple of 4
const uint RQ = RN / 4u;

// Elements i and i + 1 of W; i even (VKF_MATMUL_FLAG_PAIRS).
vec2 load_w_pair(uint i) {
#if defined(WEIGHTS_F16)
    return unpackHalf2x16(w_data[i >> 1u]);
#else
    return vec2(w_data[i], w_data[i + 1u]);
#endif
}

#if defined(WIDE64)
vec4 floats2(uint64_t a, uint64_t b) {
    return vec4(uintBitsToFloat(unpackUint2x32(a)), uintBitsToFloat(unpackUint2x32(b)));
}
// W[e .. e + 3] and X[e .. e + 3]; e a multiple of 4.
vec4 load_w4(uint e) {
#if defined(WEIGHTS_F16)
    const uvec2 u = unpackUint2x32(wb_data[e >> 2u]);
    return vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y));
#else
    const u64vec2 v = wb_data[e >> 2u];
    return floats2(v.x, v.y);
#endif
}
vec4 load_x4(uint e) {
    const u64vec2 v = xb_data[e >> 2u];
    return floats2(v.x, v.y);
}
#endif

void main() {
    const uint col0 = gl_GlobalInvocationID.x * RN;
    const uint row0 = gl_WorkGroupID.y * RM;
    const uint k_begin = gl_WorkGroupID.z * params.k_split;
    const uint k_end = min(params.k, k_begin + params.k_split);
    // Rows and columns past the edges read the last one (in bounds) and are never stored.
    uint w_row[RN];
    uint x_row[RM];
    [[unroll]] for (uint j = 0u; j < RN; ++j) {
        w_row[j] = params.w_base + min(col0 + j, params.n - 1u) * params.k;
    }
    [[unroll]] for (uint i = 0u; i < RM; ++i) {
        x_row[i] = params.x_base + min(row0 + i, params.m - 1u) * params.k;
    }
    vec4 acc[RM][RQ];
    [[unroll]] for (uint i = 0u; i < RM; ++i) {
        [[unroll]] for (uint q = 0u; q < RQ; ++q) {
            acc[i][q] = vec4(0.0);
        }
    }
    // The constant-count loops are unrolled by the compiler: the k loop is the only loop
    // left, one iteration per 4 k with WIDE64 and VKF_MATMUL_FLAG_VEC8, per pair of k with
    // VKF_MATMUL_FLAG_PAIRS, else per k.
#if defined(WIDE64)
    if ((params.flags & VKF_MATMUL_FLAG_VEC8) != 0u) {
        for (uint kk = k_begin; kk < k_end; kk += 4u) {
            vec4 w[RN]; // W[col0 + j, kk .. kk + 3]: one 64-bit load per column (fp16)
            [[unroll]] for (uint j = 0u; j < RN; ++j) {
                w[j] = load_w4(w_row[j] + kk);
            }
            [[unroll]] for (uint i = 0u; i < RM; ++i) {
                const vec4 x = load_x4(x_row[i] + kk); // the same for all lanes
                [[unroll]] for (uint q = 0u; q < RQ; ++q) {
                    const uint j = 4u * q;
                    acc[i][q] += (x.x * vec4(w[j].x, w[j + 1u].x, w[j + 2u].x, w[j + 3u].x) +
                                  x.y * vec4(w[j].y, w[j + 1u].y, w[j + 2u].y, w[j + 3u].y)) +
                                 (x.z * vec4(w[j].z, w[j + 1u].z, w[j + 2u].z, w[j + 3u].z) +
                                  x.w * vec4(w[j].w, w[j + 1u].w, w[j + 2u].w, w[j + 3u].w));
                }
            }
        }
    } else
#endif
    if ((params.flags & VKF_MATMUL_FLAG_PAIRS) != 0u) {
        for (uint kk = k_begin; kk < k_end; kk += 2u) {
            vec4 w_lo[RQ], w_hi[RQ]; // W[col0 + 4q .. +3, kk] and [.., kk + 1]
            [[unroll]] for (uint q = 0u; q < RQ; ++q) {
                const vec2 a = load_w_pair(w_row[4u * q] + kk);
                const vec2 b = load_w_pair(w_row[4u * q + 1u] + kk);
                const vec2 c = load_w_pair(w_row[4u * q + 2u] + kk);
                const vec2 d = load_w_pair(w_row[4u * q + 3u] + kk);
                w_lo[q] = vec4(a.x, b.x, c.x, d.x);
                w_hi[q] = vec4(a.y, b.y, c.y, d.y);
            }
            [[unroll]] for (uint i = 0u; i < RM; ++i) {
                const float x0 = x_data[x_row[i] + kk];
                const float x1 = x_data[x_row[i] + kk + 1u];
                [[unroll]] for (uint q = 0u; q < RQ; ++q) {
                    acc[i][q] += x0 * w_lo[q] + x1 * w_hi[q];
                }
            }
        }
    } else {
        for (uint kk = k_begin; kk < k_end; ++kk) {
            vec4 w[RQ];
            [[unroll]] for (uint q = 0u; q < RQ; ++q) {
                w[q] = vec4(VKF_LOAD_WEIGHT(w_data, w_row[4u * q] + kk),
                            VKF_LOAD_WEIGHT(w_data, w_row[4u * q + 1u] + kk),
                            VKF_LOAD_WEIGHT(w_data, w_row[4u * q + 2u] + kk),
                            VKF_LOAD_WEIGHT(w_data, w_row[4u * q + 3u] + kk));
            }
            [[unroll]] for (uint i = 0u; i < RM; ++i) {
                const float x = x_data[x_row[i] + kk];
                [[unroll]] for (uint q = 0u; q < RQ; ++q) {
                    acc[i][q] += x * w[q];
                }
            }
        }
    }
    [[unroll]] for (uint i = 0u; i < RM; ++i) {
        [[unroll]] for (uint q = 0u; q < RQ; ++q) {
            store_quad(row0 + i, col0 + 4u * q, acc[i][q]);
        }
    }
}

#endif
