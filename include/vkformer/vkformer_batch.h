/* vkformer's C API, batches: many generations at once on one model (continuous batching),
 * each submitted with its own sampling and stepped together (included by vkformer.h, whose
 * rules hold here too; include vkformer.h, not this file). */
#ifndef VKFORMER_VKFORMER_BATCH_H
#define VKFORMER_VKFORMER_BATCH_H

#include "vkformer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Batches: many generations at once (continuous batching) ---------------------------- */

typedef struct vkf_batch vkf_batch;

typedef struct vkf_batch_params {
    size_t struct_size;
    uint32_t max_tokens;          /* KV-cache capacity over all sequences; required, at most
                                     0x7fffffff */
    uint32_t max_sequence_tokens; /* 0: max_tokens */
    uint32_t max_sequences;       /* most sequences one step runs; 0: 16 */
    uint32_t chunk;               /* most rows per step; 0: 128 */
    int kv_f32;
    int share_prefixes;
    uint32_t kv_k; /* vkf_kv_format of K and of V, as vkf_session_params' */
    uint32_t kv_v;
    /* Nonzero: an ended generation's full KV blocks stay until the batch needs them, and a
     * later prompt that starts with the same tokens takes them (vkf_batch_cached_tokens). */
    int prefix_cache;
} vkf_batch_params;

static inline vkf_batch_params vkf_batch_default_params(void) {
    vkf_batch_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof(vkf_batch_params);
    p.max_tokens = 2048;
    p.share_prefixes = 1;
    return p;
}

/* An array element: no struct_size, so it does not grow within an ABI version. */
typedef struct vkf_batch_event {
    uint64_t sequence;
    uint32_t stop; /* vkf_stop_reason */
    uint32_t n_prompt_tokens;
    uint32_t n_tokens;
} vkf_batch_event;

VKF_API vkf_status vkf_batch_create(vkf_model* model, const vkf_batch_params* params, vkf_batch** out);
/* VKF_ERROR_BUSY while the batch is in a call (vkf_batch_step from a token callback, or
 * another thread's call): free it after the call returns. */
VKF_API vkf_status vkf_batch_free(vkf_batch* batch);
/* Starts a generation; its tokens go to params->on_token during vkf_batch_step (the params
 * are copied; freeing its tokenizer or cancel flag is refused with VKF_ERROR_BUSY until it
 * ends). */
VKF_API vkf_status vkf_batch_submit(vkf_batch* batch, const uint32_t* prompt, size_t n_prompt,
                                    const vkf_generate_params* params, uint64_t* sequence);
/* Ends a generation (VKF_STOP_CANCELLED): reported by the next step. */
VKF_API vkf_status vkf_batch_cancel(vkf_batch* batch, uint64_t sequence);
/* One forward pass for every running generation. The generations that ended are written to
 * `ended` (up to `capacity`; the rest come with later steps); *n_ended their count. */
VKF_API vkf_status vkf_batch_step(vkf_batch* batch, vkf_batch_event* ended, size_t capacity, size_t* n_ended);
/* Generations running or ended but not yet reported. */
VKF_API vkf_status vkf_batch_pending(const vkf_batch* batch, size_t* count);
/* Of a generation's prompt tokens, those taken from the prefix cache or another running
 * sequence rather than computed (known from vkf_batch_submit on, until vkf_batch_step reports
 * its end; VKF_ERROR_INVALID_ARGUMENT after). */
VKF_API vkf_status vkf_batch_cached_tokens(const vkf_batch* batch, uint64_t sequence, uint32_t* n_cached);

#ifdef __cplusplus
}
#endif

#endif /* VKFORMER_VKFORMER_BATCH_H */
