/* vkformer's C API, log-probabilities: each generated token's and its most likely alternatives',
 * given to vkf_generate_params.on_logprobs (included by vkformer.h before vkf_generate_params,
 * whose rules hold here too; include vkformer.h, not this file). docs/API.md "Log-probabilities".
 *
 * A log-probability is log_softmax of the model's raw logits for the position, computed in
 * double: what the model thinks, before logit_bias, the penalties, a grammar, truncation or
 * temperature (what the sampler drew from), as OpenAI's `logprobs` report them. */
#ifndef VKFORMER_VKFORMER_LOGPROBS_H
#define VKFORMER_VKFORMER_LOGPROBS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An array element: no struct_size, so it does not grow within an ABI version. */
typedef struct vkf_logprob {
    uint32_t token;
    double logprob; /* <= 0 */
} vkf_logprob;

/* Called for each generated token, before vkf_generate_params.on_token, with the token's
 * index in the generation (0 first), its log-probability (`chosen`) and the n_top most likely
 * tokens' (params.n_logprobs of them), most likely first, ties by lower id. The pointers are
 * valid during the call only. The rules of vkf_token_fn on what the callback may call hold. */
typedef void (*vkf_logprobs_fn)(uint32_t index, const vkf_logprob* chosen, const vkf_logprob* top, size_t n_top,
                                void* user_data);

#ifdef __cplusplus
}
#endif

#endif /* VKFORMER_VKFORMER_LOGPROBS_H */
