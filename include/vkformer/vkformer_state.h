/* vkformer's C API, sequence state: a session's sequence saved to memory or a file and loaded
 * into a session of the same model later, in this process or another (included by vkformer.h,
 * whose rules hold here too; include vkformer.h, not this file). docs/API.md "Sequence state".
 *
 * A state holds the tokens in the session's KV cache, the chunks they ran in and their K/V
 * blocks as the cache stores them (f32, f16, q8_0, q4_0), behind a header with a format
 * version, the model's fingerprint (family, shapes, weight format, KV-cache format and block
 * size, a CRC-32 of the model directory's tokenizer.json) and a CRC-32 of the whole. Loaded,
 * the session continues exactly as the one that saved it: after vkf_generate, pass the last
 * generated token first in the next prompt, as in one session. The sampler is not saved:
 * every vkf_generate seeds its own from vkf_sampling_params.seed. */
#ifndef VKFORMER_VKFORMER_STATE_H
#define VKFORMER_VKFORMER_STATE_H

#include "vkformer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The size vkf_session_save_state writes now. VKF_ERROR_MODEL for a session holding no tokens. */
VKF_API vkf_status vkf_session_state_size(const vkf_session* session, size_t* size);
/* Writes the state to `buffer` (*size set to its bytes); VKF_ERROR_BUFFER_TOO_SMALL, with *size
 * set, when it is over `capacity` (buffer may then be NULL). */
VKF_API vkf_status vkf_session_save_state(vkf_session* session, void* buffer, size_t capacity, size_t* size);
/* Replaces the session's sequence by a saved one. Refused with VKF_ERROR_MODEL, the session left
 * as it was, for bytes that are not a state, a newer format version, a truncated or corrupted
 * state (its size or CRC-32), another model or KV-cache format (the message names each field
 * that differs), or more tokens than the session's max_tokens. */
VKF_API vkf_status vkf_session_load_state(vkf_session* session, const void* buffer, size_t size);
/* The same through a file: written whole under a temporary name and renamed (never partial);
 * read with the refusals above, and VKF_ERROR_IO for a file that cannot be read. */
VKF_API vkf_status vkf_session_save_state_file(vkf_session* session, const char* path);
VKF_API vkf_status vkf_session_load_state_file(vkf_session* session, const char* path);

#ifdef __cplusplus
}
#endif

#endif /* VKFORMER_VKFORMER_STATE_H */
