// The storage-buffer bindings of the matmul kernels (shaders/matmul.comp, matmul_quant.comp,
// matmul_coopmat.comp and matmul.comp's REDUCE pass), named once for the shaders and
// host/ops/matmul_record.cpp. See interface.h for how one file serves GLSL and C++.
//
// In order: X; the weights (W, then a quantized format's scales); the epilogue's bias,
// residual (SCATTER: the rows' slots) and Y; a SCATTER's K and V caches; a fused LayerNorm's
// (LN_X) weight and bias. Everything after X moves with `w`, the number of weight bindings:
// VKF_MATMUL_WEIGHTS_DENSE, VKF_MATMUL_WEIGHTS_QUANT, or 0 in the REDUCE pass, whose partial
// sums take X's binding. NO_EPILOGUE kernels bind X, the weights and the partial sums only.
// Vector views of a buffer (X4, W8, ...) share its binding.
#ifndef VKF_INTERFACE_MATMUL_BINDINGS_H
#define VKF_INTERFACE_MATMUL_BINDINGS_H

#define VKF_MATMUL_WEIGHTS_DENSE 1
#define VKF_MATMUL_WEIGHTS_QUANT 2

#define VKF_MATMUL_BINDING_X 0  // the REDUCE pass: the partial sums
#define VKF_MATMUL_BINDING_W 1
#define VKF_MATMUL_BINDING_SCALES 2  // quantized weights only
#define VKF_MATMUL_BINDING_BIAS(w) (1 + (w))
#define VKF_MATMUL_BINDING_PARTIALS(w) (1 + (w))  // NO_EPILOGUE's Y, where the bias would be
#define VKF_MATMUL_BINDING_RESIDUAL(w) (2 + (w))  // SCATTER: the slots
#define VKF_MATMUL_BINDING_Y(w) (3 + (w))
#define VKF_MATMUL_BINDING_K_CACHE(w) (4 + (w))  // SCATTER only
#define VKF_MATMUL_BINDING_V_CACHE(w) (5 + (w))
// `scatter`: 1 with the K and V caches, else 0.
#define VKF_MATMUL_BINDING_LN_WEIGHT(w, scatter) (4 + (w) + 2 * (scatter))
#define VKF_MATMUL_BINDING_LN_BIAS(w, scatter) (5 + (w) + 2 * (scatter))

// How many a kernel binds (`scatter` and `ln` 1 or 0).
#define VKF_MATMUL_BINDING_COUNT(w, scatter, ln) (4 + (w) + 2 * (scatter) + 2 * (ln))
#define VKF_MATMUL_NO_EPILOGUE_BINDING_COUNT(w) (2 + (w))

#endif
