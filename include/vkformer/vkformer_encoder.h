/* vkformer's C API, embeddings: JinaBERT encoders (included by vkformer.h, whose rules hold
 * here too; include vkformer.h, not this file). */
#ifndef VKFORMER_VKFORMER_ENCODER_H
#define VKFORMER_VKFORMER_ENCODER_H

#include "vkformer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vkf_encoder vkf_encoder;

typedef struct vkf_encoder_params {
    size_t struct_size;
    uint32_t weights; /* vkf_weight_format; default: fp16 for an fp16 checkpoint, else fp32 */
    int check_finite_weights;
} vkf_encoder_params;

static inline vkf_encoder_params vkf_encoder_default_params(void) {
    vkf_encoder_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof(vkf_encoder_params);
    p.check_finite_weights = 1;
    return p;
}

typedef enum vkf_pooling { VKF_POOLING_NONE = 0, VKF_POOLING_MEAN = 1, VKF_POOLING_CLS = 2 } vkf_pooling;

VKF_API vkf_status vkf_encoder_load(vkf_context* ctx, const char* dir, const vkf_encoder_params* params,
                                    vkf_encoder** out);
VKF_API vkf_status vkf_encoder_free(vkf_encoder* encoder);
VKF_API vkf_status vkf_encoder_hidden_size(const vkf_encoder* encoder, uint32_t* size);
/* The embedding of `ids` ([hidden]; VKF_POOLING_NONE: [n_ids, hidden]), L2-normalized when
 * `normalize`; *n set to the float count, VKF_ERROR_BUFFER_TOO_SMALL when over capacity. */
VKF_API vkf_status vkf_embed(vkf_encoder* encoder, const uint32_t* ids, size_t n_ids, uint32_t pooling, int normalize,
                             float* out, size_t capacity, size_t* n);

#ifdef __cplusplus
}
#endif

#endif /* VKFORMER_VKFORMER_ENCODER_H */
