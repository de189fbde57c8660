// The interface of shaders/matmul_coopmat.comp (the matmul on cooperative matrices, fp16
// weights) with host/ops/matmul_coopmat.cpp: matmul.comp's push block (MatmulPush), flags
// and split-K partial sums (interface/matmul.h), and these specialization constants. See
// interface.h for how one file serves GLSL and C++.
#ifndef VKF_INTERFACE_MATMUL_COOPMAT_H
#define VKF_INTERFACE_MATMUL_COOPMAT_H

#include "matmul.h"

// Specialization constants (0-2: the workgroup size, SG_M * SG_N subgroups wide; 8: the
// SCATTER head size, unused here). The Y tile of a workgroup is
// (SG_M * FRAG_M * CM) x (SG_N * FRAG_N * CN), walked along K in steps of K_STEPS * CK.
#define VKF_COOPMAT_SPEC_CM 3          // the cooperative matrix's M (rows of A, C and D)
#define VKF_COOPMAT_SPEC_CN 4          // its N (columns of B, C and D)
#define VKF_COOPMAT_SPEC_CK 5          // its K (columns of A, rows of B)
#define VKF_COOPMAT_SPEC_SG_M 6        // subgroups along M
#define VKF_COOPMAT_SPEC_SG_N 7        // subgroups along N
#define VKF_COOPMAT_SPEC_FRAG_M 9      // accumulator matrices of a subgroup along M
#define VKF_COOPMAT_SPEC_FRAG_N 10     // and along N
#define VKF_COOPMAT_SPEC_K_STEPS 11    // CK steps per shared-memory K tile
#define VKF_COOPMAT_SPEC_EMU_LANES 12  // EMULATE (tests): the subgroup size

// Shared-memory row padding, in elements: rows of the fp16 tiles (X, W) and of the fp32
// accumulator staging stay 16-byte aligned (cooperative-matrix loads and stores need it).
#define VKF_COOPMAT_PAD_F16 8
#define VKF_COOPMAT_PAD_F32 4

#endif
