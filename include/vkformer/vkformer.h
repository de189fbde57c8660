/* vkformer's C API: ALiBi transformer inference on Vulkan compute, for applications that link
 * libvkformer.so (C, C++, JNI). C11; no C++ and no Vulkan header needed.
 *
 * Rules (docs/DESIGN.md "The C API"):
 * - Every call that can fail returns a vkf_status; on failure vkf_last_error() gives the
 *   message, on this thread, of what went wrong. Nothing throws or aborts across the boundary.
 * - Handles are opaque. A handle passed to a *_free function is invalid afterwards; freeing
 *   NULL is a no-op; freeing a handle twice (or using a freed one) is detected where the
 *   address has not been reused and answered with VKF_ERROR_INVALID_HANDLE.
 * - A child keeps what it was made from alive: a model keeps its context, a session or batch
 *   its model. Freeing them in any order is allowed.
 * - Parameter structs carry their size in their first member, struct_size. Start from
 *   vkf_*_default_params() (inline here: it fills struct_size with this header's sizeof), then
 *   change fields. A newer library reads only the first struct_size bytes and uses its own
 *   defaults for fields added after them. Output structs (vkf_device_info, ...) are the same:
 *   set struct_size to sizeof, the library writes no more than struct_size bytes.
 * - Strings are UTF-8. Out-parameters are written only on VKF_OK (and the sizes on
 *   VKF_ERROR_BUFFER_TOO_SMALL).
 * - Threads: a context may be used from several threads; a session, batch or encoder by one
 *   thread at a time. vkf_cancel_request() may be called from any thread. A call on a session,
 *   batch or encoder while another call on it is under way (on another thread, or from its
 *   own token callback) is refused with VKF_ERROR_BUSY and changes nothing: the call under way
 *   goes on as if it had not been made. Freeing it then is refused the same way (free it
 *   after the call returns; to end a generation from its callback, return nonzero).
 * - ABI: VKF_ABI_VERSION is the SONAME's number (libvkformer.so.VKF_ABI_VERSION). Functions and
 *   enum values are only added; struct fields are only appended; anything else raises it.
 */
#ifndef VKFORMER_VKFORMER_H
#define VKFORMER_VKFORMER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(VKF_BUILDING_LIBRARY) && defined(__GNUC__)
#define VKF_API __attribute__((visibility("default")))
#else
#define VKF_API
#endif

/* ---- Version ---------------------------------------------------------------------------- */

#define VKF_ABI_VERSION 1
#define VKF_VERSION_MAJOR 0
#define VKF_VERSION_MINOR 1
#define VKF_VERSION_PATCH 0

/* The library's version as MAJOR * 10000 + MINOR * 100 + PATCH (may differ from the header's). */
VKF_API uint32_t vkf_version(void);
/* The ABI version the library implements (its SONAME number). */
VKF_API uint32_t vkf_abi_version(void);
/* "0.1.0 (git abc1234)": static storage. */
VKF_API const char* vkf_version_string(void);

/* ---- Status and errors ------------------------------------------------------------------ */

typedef enum vkf_status {
    VKF_OK = 0,
    VKF_ERROR_INVALID_ARGUMENT = 1, /* NULL pointer, bad struct_size, value out of range */
    VKF_ERROR_INVALID_HANDLE = 2,   /* NULL, freed or foreign handle */
    VKF_ERROR_INVALID_UTF8 = 3,     /* text that is not UTF-8 */
    VKF_ERROR_IO = 4,               /* a file or directory that cannot be read */
    VKF_ERROR_MODEL = 5,            /* a model, tokenizer or input vkformer refuses (the message says why) */
    VKF_ERROR_OUT_OF_MEMORY = 6,    /* device or host memory; a model too big for the device */
    VKF_ERROR_DEVICE_LOST = 7,      /* GPU timeout or lost device: the context is unusable */
    VKF_ERROR_CANCELLED = 8,        /* vkf_cancel_request() or a progress callback stopped it */
    VKF_ERROR_BUFFER_TOO_SMALL = 9, /* the required size was written; call again */
    VKF_ERROR_UNSUPPORTED = 10,     /* no Vulkan device, or a feature the device lacks */
    VKF_ERROR_INTERNAL = 11,        /* anything else (a bug: please report the message) */
    VKF_ERROR_BUSY = 12             /* the session, batch or encoder is in a call already: from its
                                       own token callback, or on another thread */
} vkf_status;

/* "VKF_ERROR_IO": static storage; "VKF_UNKNOWN_STATUS" for a value not listed. */
VKF_API const char* vkf_status_name(vkf_status status);
/* The message of the last call on this thread that failed; "" after a call returning VKF_OK
 * (vkf_version*, vkf_status_name and this function leave it alone). Valid until the next
 * vkformer call on this thread. Never NULL. */
VKF_API const char* vkf_last_error(void);

/* ---- Cancellation ----------------------------------------------------------------------- */

/* A flag one thread sets and a load or a generation on another thread checks (between
 * tensors while loading, between tokens while generating). */
typedef struct vkf_cancel vkf_cancel;
VKF_API vkf_status vkf_cancel_create(vkf_cancel** out);
VKF_API vkf_status vkf_cancel_request(vkf_cancel* cancel); /* thread-safe */
VKF_API vkf_status vkf_cancel_reset(vkf_cancel* cancel);
/* *requested = 1 when set, else 0. */
VKF_API vkf_status vkf_cancel_is_requested(const vkf_cancel* cancel, int* requested);
VKF_API vkf_status vkf_cancel_free(vkf_cancel* cancel);

/* ---- Devices ---------------------------------------------------------------------------- */

typedef enum vkf_device_type {
    VKF_DEVICE_OTHER = 0,
    VKF_DEVICE_INTEGRATED_GPU = 1,
    VKF_DEVICE_DISCRETE_GPU = 2,
    VKF_DEVICE_VIRTUAL_GPU = 3,
    VKF_DEVICE_CPU = 4
} vkf_device_type;

/* A device and the limits vkformer plans its kernels by. From vkf_device_get_info: what the
 * device reports; from vkf_context_get_device_info: after the context's limit overrides, with
 * the memory its buffers can still get. */
typedef struct vkf_device_info {
    size_t struct_size;
    uint32_t index; /* in vkEnumeratePhysicalDevices order */
    char name[256];
    char driver_name[256];
    uint32_t type; /* vkf_device_type */
    uint32_t vendor_id;
    uint32_t device_id;
    uint32_t api_version; /* VK_MAKE_API_VERSION encoding */
    uint32_t max_shared_memory;
    uint32_t max_workgroup_invocations;
    uint32_t max_workgroup_size[3];
    uint32_t max_workgroup_count[3];
    uint32_t max_push_constants;
    uint32_t max_storage_buffers;
    uint64_t max_storage_buffer_range;
    uint32_t subgroup_size;
    uint32_t compute_units; /* 0: unknown */
    int fp16_storage;
    int fp16_arithmetic;
    int integer_dot_product;
    uint64_t device_local_bytes;     /* size of the largest device-local heap */
    uint64_t memory_available_bytes; /* context only: what buffers can still get; else 0 */
} vkf_device_info;

/* Vulkan devices this machine has (loads the Vulkan loader; creates a short-lived instance). */
VKF_API vkf_status vkf_device_count(uint32_t* count);
VKF_API vkf_status vkf_device_get_info(uint32_t index, vkf_device_info* info);

/* ---- Context ---------------------------------------------------------------------------- */

typedef struct vkf_context vkf_context;

typedef enum vkf_log_level { VKF_LOG_INFO = 0, VKF_LOG_WARNING = 1, VKF_LOG_ERROR = 2 } vkf_log_level;
/* Validation-layer messages and vkformer's warnings; may be called from any thread using the
 * context. `message` is valid during the call. */
typedef void (*vkf_log_fn)(vkf_log_level level, const char* message, void* user_data);

typedef struct vkf_context_params {
    size_t struct_size;
    int32_t device_index;           /* -1: VKF_DEVICE, else the best device */
    const char* device_name;        /* substring of the device's name; NULL: by device_index */
    int32_t validation;             /* -1: VKF_VALIDATION, 0 off, 1 on (Khronos validation layer) */
    const char* limits;             /* forced smaller limits, VKF_LIMITS syntax ("phone",
                                       "device_heap=64M,..."), applied over VKF_LIMITS; NULL: none */
    const char* pipeline_cache_dir; /* NULL: the default directory; "": no cache on disk */
    uint32_t timeout_ms;            /* per submission; 0: VKF_TIMEOUT_MS, else the default */
    vkf_log_fn log;                 /* NULL: warnings and errors to stderr */
    void* log_user_data;
    /* Adopting the application's Vulkan objects (all non-NULL or all NULL): vkformer uses
     * them and never destroys them. They must outlive the context. The queue must support
     * compute; the features say what the application enabled at vkCreateDevice. */
    void* vk_instance;        /* VkInstance */
    uint32_t vk_api_version;  /* the instance's apiVersion; 0: Vulkan 1.1 */
    void* vk_physical_device; /* VkPhysicalDevice */
    void* vk_device;          /* VkDevice */
    void* vk_queue;           /* VkQueue */
    uint32_t vk_queue_family;
    int vk_storage_16bit; /* storageBuffer16BitAccess */
    int vk_storage_8bit;  /* storageBuffer8BitAccess */
    int vk_float16;       /* shaderFloat16 */
    int vk_int8;          /* shaderInt8 */
    int vk_int64;         /* shaderInt64 */
    int vk_integer_dot_product;
    int vk_subgroup_size_control;
    int vk_compute_full_subgroups;
} vkf_context_params;

static inline vkf_context_params vkf_context_default_params(void) {
    vkf_context_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof(vkf_context_params);
    p.device_index = -1;
    p.validation = -1;
    return p;
}

/* params NULL: the defaults. */
VKF_API vkf_status vkf_context_create(const vkf_context_params* params, vkf_context** out);
VKF_API vkf_status vkf_context_free(vkf_context* ctx);
VKF_API vkf_status vkf_context_get_device_info(const vkf_context* ctx, vkf_device_info* info);

/* ---- Models ----------------------------------------------------------------------------- */

typedef struct vkf_model vkf_model;

typedef enum vkf_weight_format {
    VKF_WEIGHTS_DEFAULT = 0, /* the device's default (fp16 where it stores fp16, else fp32) */
    VKF_WEIGHTS_F32 = 1,
    VKF_WEIGHTS_F16 = 2,
    VKF_WEIGHTS_Q8_0 = 3,
    VKF_WEIGHTS_Q4_0 = 4
} vkf_weight_format;

/* The storage of K or V in a KV cache (vkf_session_params.kv_k, kv_v and the like): fp16 (or
 * fp32 with kv_f32), or quantized in blocks of 32 along the head (docs/QUANTIZATION.md, "KV
 * cache": about 0.53x and 0.28x the bytes of fp16; head sizes of 32n, others refused with
 * VKF_ERROR_INVALID_ARGUMENT). A quantized side keeps the other side in fp16 (not kv_f32). */
typedef enum vkf_kv_format { VKF_KV_DENSE = 0, VKF_KV_Q8_0 = 1, VKF_KV_Q4_0 = 2 } vkf_kv_format;

/* After each tensor uploaded. Return nonzero to cancel the load (VKF_ERROR_CANCELLED). */
typedef int (*vkf_progress_fn)(uint64_t bytes_done, uint64_t bytes_total, void* user_data);

typedef struct vkf_model_params {
    size_t struct_size;
    uint32_t weights; /* vkf_weight_format */
    /* Tokens of the sessions the model is loaded for: the load is refused before anything
     * is uploaded (VKF_ERROR_OUT_OF_MEMORY) when weights plus such a session do not fit.
     * 0: the weights alone. */
    uint32_t max_tokens;
    int check_finite_weights; /* refuse a checkpoint holding NaN or infinite weights */
    vkf_progress_fn progress;
    void* progress_user_data;
    vkf_cancel* cancel; /* NULL: none */
    /* The KV cache of those sessions, for the estimate (as vkf_session_params' fields). */
    int kv_f32;
    uint32_t kv_k; /* vkf_kv_format */
    uint32_t kv_v; /* vkf_kv_format */
} vkf_model_params;

static inline vkf_model_params vkf_model_default_params(void) {
    vkf_model_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof(vkf_model_params);
    p.check_finite_weights = 1;
    return p;
}

typedef struct vkf_memory_estimate {
    size_t struct_size;
    uint64_t weights;
    uint64_t kv_cache;    /* for params->max_tokens */
    uint64_t activations; /* for params->max_tokens */
    uint64_t total;
    uint64_t available; /* what the context's buffers can still get */
    int fits;           /* total <= available */
} vkf_memory_estimate;

/* Reads DIR/config.json only: what loading `dir` with `params` would take. */
VKF_API vkf_status vkf_model_estimate_memory(vkf_context* ctx, const char* dir, const vkf_model_params* params,
                                             vkf_memory_estimate* estimate);
/* Reads DIR/config.json and DIR's safetensors checkpoint, or DIR naming a llama.cpp GGUF file
   (read in place; docs/FORMATS.md), and uploads the weights. */
VKF_API vkf_status vkf_model_load(vkf_context* ctx, const char* dir, const vkf_model_params* params, vkf_model** out);
/* A llama.cpp GGUF model held in bytes [offset, offset + length) of the regular file open as
   `fd` (an Android asset: AssetFileDescriptor's getParcelFileDescriptor().getFd(),
   getStartOffset() and getLength()), read in place. The descriptor is duplicated: the caller
   may close its own once this returns. VKF_ERROR_IO for a descriptor that is not open, not a
   regular file, or shorter than offset + length; VKF_ERROR_MODEL for a file vkformer cannot
   run. (Text needs a tokenizer: vkf_tokenizer_load takes the GGUF file's path too.) */
VKF_API vkf_status vkf_model_load_fd(vkf_context* ctx, int fd, uint64_t offset, uint64_t length,
                                     const vkf_model_params* params, vkf_model** out);
VKF_API vkf_status vkf_model_free(vkf_model* model);

typedef struct vkf_model_info {
    size_t struct_size;
    char family[32]; /* "bloom", "mpt", "falcon", "baichuan", "jais", "refact" */
    uint32_t vocab_size;
    uint32_t hidden_size;
    uint32_t n_layer;
    uint32_t n_head;
    uint32_t n_kv_head;
    uint32_t weights; /* vkf_weight_format loaded */
    uint64_t weight_bytes;
    uint32_t n_eos; /* end-of-sequence ids from config.json (up to 8 here) */
    uint32_t eos[8];
    int32_t bos; /* -1: none */
} vkf_model_info;
VKF_API vkf_status vkf_model_get_info(const vkf_model* model, vkf_model_info* info);

/* ---- Tokenizer -------------------------------------------------------------------------- */

typedef struct vkf_tokenizer vkf_tokenizer;

/* `path`: a tokenizer.json, a directory holding one, or a llama.cpp GGUF file (its tokenizer.ggml.*). */
VKF_API vkf_status vkf_tokenizer_load(const char* path, vkf_tokenizer** out);
VKF_API vkf_status vkf_tokenizer_free(vkf_tokenizer* tokenizer);
VKF_API vkf_status vkf_tokenizer_vocab_size(const vkf_tokenizer* tokenizer, uint32_t* size);
/* The id of a vocabulary or added token's string; VKF_ERROR_MODEL when it has none. */
VKF_API vkf_status vkf_tokenizer_token_id(const vkf_tokenizer* tokenizer, const char* token, uint32_t* id);
/* The ids of `text` (`length` bytes of UTF-8; invalid UTF-8: VKF_ERROR_INVALID_UTF8).
 * add_special: BOS/EOS as the tokenizer's post-processor adds them. *n_ids is set to the count;
 * VKF_ERROR_BUFFER_TOO_SMALL when it is over `capacity` (ids may be NULL to ask the count). */
VKF_API vkf_status vkf_tokenize(const vkf_tokenizer* tokenizer, const char* text, size_t length, int add_special,
                                uint32_t* ids, size_t capacity, size_t* n_ids);
/* The text of `ids`, NUL-terminated; *length is set to its length without the NUL;
 * VKF_ERROR_BUFFER_TOO_SMALL when length + 1 is over `capacity` (text may be NULL). Bytes that
 * do not form UTF-8 come out as U+FFFD. */
VKF_API vkf_status vkf_detokenize(const vkf_tokenizer* tokenizer, const uint32_t* ids, size_t n_ids, int skip_special,
                                  char* text, size_t capacity, size_t* length);

/* ---- Sessions and generation ------------------------------------------------------------ */

typedef struct vkf_session vkf_session;

typedef struct vkf_session_params {
    size_t struct_size;
    uint32_t max_tokens; /* KV-cache capacity: prompt plus generated tokens; required, at most
                            0x7fffffff (positions are 32-bit signed in the kernels) */
    uint32_t chunk;      /* most prompt tokens per submission; 0: 128 */
    int kv_f32;          /* KV cache in fp32 instead of fp16 */
    int int8_activations;
    uint32_t kv_k; /* vkf_kv_format of K in the KV cache; VKF_KV_DENSE: fp16 (kv_f32: fp32) */
    uint32_t kv_v; /* vkf_kv_format of V */
    /* Nonzero: the full KV blocks (16 tokens) of the sequence vkf_session_reset ends stay
     * until the cache needs them, and a next prompt that starts with the same tokens takes
     * them instead of computing them (vkf_generate_result's n_cached_tokens). */
    int prefix_cache;
} vkf_session_params;

static inline vkf_session_params vkf_session_default_params(void) {
    vkf_session_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof(vkf_session_params);
    p.max_tokens = 512;
    return p;
}

VKF_API vkf_status vkf_session_create(vkf_model* model, const vkf_session_params* params, vkf_session** out);
/* VKF_ERROR_BUSY while the session is in a call (from its own token callback, or on another
 * thread): the call goes on with the session intact; free it after the call returns. */
VKF_API vkf_status vkf_session_free(vkf_session* session);
/* Forgets the sequence: the next generation starts from position 0. */
VKF_API vkf_status vkf_session_reset(vkf_session* session);
/* Tokens in the session's KV cache. The one session call its own token callback may make. */
VKF_API vkf_status vkf_session_position(const vkf_session* session, uint32_t* position);

/* Added to one token's logit before the other stages (-100 bans it). */
typedef struct vkf_logit_bias {
    uint32_t token; /* below the model's vocab_size */
    float bias;
} vkf_logit_bias;

/* The sampler chain, applied in this order (docs/CAPI.md): logit_bias, penalties over the last
 * penalty_last_n tokens (prompt included), then, unless greedy, top_k, typical_p, top_p, min_p,
 * temperature and one draw from a generator seeded with `seed`. Every field's default turns its
 * stage off. The fields after `seed` were appended in vkformer 1.x: a struct_size that ends at
 * `seed` gets their defaults. */
typedef struct vkf_sampling_params {
    size_t struct_size;
    float temperature; /* 0: greedy (argmax after logit_bias and penalties) */
    uint32_t top_k;    /* 0: off */
    float top_p;       /* 1: off */
    uint64_t seed;
    float min_p;              /* 0: off; keeps tokens with p >= min_p * p_max */
    float typical_p;          /* 1: off */
    float repetition_penalty; /* 1: off; a seen token's logit l becomes l / r if l > 0, else l * r */
    float presence_penalty;   /* 0: off; subtracted once from a seen token's logit */
    float frequency_penalty;  /* 0: off; subtracted per occurrence */
    uint32_t penalty_last_n;  /* the window the penalties see (default 64; 0: none) */
    const vkf_logit_bias* logit_bias;
    size_t n_logit_bias;
} vkf_sampling_params;

static inline vkf_sampling_params vkf_sampling_default_params(void) {
    vkf_sampling_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof(vkf_sampling_params);
    p.top_p = 1.0f;
    p.typical_p = 1.0f;
    p.repetition_penalty = 1.0f;
    p.penalty_last_n = 64;
    return p;
}

#define VKF_TOKEN_NONE 0xffffffffu

/* Called for each generated token with the text that became complete with it (UTF-8 whole
 * characters only: a character split over tokens comes with its last token; `text` is
 * NUL-terminated, `length` bytes, often empty; NULL when the generation has no tokenizer).
 * At the end, bytes still held back (an incomplete character, as U+FFFD) come in one more
 * call with token VKF_TOKEN_NONE, whose return value is ignored. Return nonzero to stop
 * after this token (VKF_STOP_CALLBACK).
 * From the callback, the session generating may only be asked vkf_session_position (a batch:
 * vkf_batch_pending): vkf_generate, vkf_session_reset, vkf_session_forward or
 * vkf_session_free on it (a batch: submit, cancel, step, free) return VKF_ERROR_BUSY and change
 * nothing, and the generation goes on as if they had not been called. Other sessions may be
 * used. Freeing the generation's tokenizer or cancel flag, from the callback or another thread,
 * is refused too (VKF_ERROR_BUSY) until the generation ends. */
typedef int (*vkf_token_fn)(uint32_t token, const char* text, size_t length, void* user_data);

typedef enum vkf_stop_reason {
    VKF_STOP_LENGTH = 0,     /* max_new_tokens generated */
    VKF_STOP_EOS = 1,        /* a stop id (kept in the tokens) */
    VKF_STOP_CALLBACK = 2,   /* the token callback returned nonzero */
    VKF_STOP_CANCELLED = 3,  /* vkf_cancel_request() */
    VKF_STOP_CACHE_FULL = 4, /* the KV cache ran out (no key window) */
    VKF_STOP_GRAMMAR = 5     /* params.grammar or json_schema could not go on (docs/API.md) */
} vkf_stop_reason;

#include "vkformer_logprobs.h" /* vkf_logprob, vkf_logprobs_fn: their own header */
typedef struct vkf_generate_params {
    size_t struct_size;
    uint32_t max_new_tokens;
    const vkf_sampling_params* sampling; /* NULL: greedy */
    /* Stops after one of these ids (+ the model's EOS with use_model_eos), each < vocab_size (else an error) */
    const uint32_t* stop_ids;
    size_t n_stop_ids;
    int use_model_eos;
    const vkf_tokenizer* tokenizer; /* for the callback's text; NULL: no text */
    vkf_token_fn on_token;
    void* user_data;
    vkf_cancel* cancel;
    const char* grammar;         /* GBNF the text follows (docs/API.md "Grammars"); NULL: none */
    const char* json_schema;     /* or a JSON schema; either needs tokenizer */
    vkf_logprobs_fn on_logprobs; /* each token's logprobs (vkformer_logprobs.h); NULL: none */
    uint32_t n_logprobs;         /* top tokens with them, at most vocab_size (0: the token only) */
} vkf_generate_params;

static inline vkf_generate_params vkf_generate_default_params(void) {
    vkf_generate_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof(vkf_generate_params);
    p.max_new_tokens = 32;
    p.use_model_eos = 1;
    return p;
}

typedef struct vkf_generate_result {
    size_t struct_size;
    uint32_t n_prompt_tokens;
    uint32_t n_tokens; /* generated (all of them, also beyond the caller's token capacity) */
    uint32_t stop;     /* vkf_stop_reason */
    double prefill_seconds;
    double decode_seconds;
    /* Of n_prompt_tokens, those taken from the prefix cache (the params' prefix_cache) or
     * from another running sequence (share_prefixes) rather than computed; 0 unless the
     * generation started the session's sequence (after creation or vkf_session_reset). */
    uint32_t n_cached_tokens;
} vkf_generate_result;

/* Runs `prompt` after what the session holds and generates up to max_new_tokens. The ids are
 * written to `tokens` (up to `capacity`; NULL/0: not kept). result may be NULL. */
VKF_API vkf_status vkf_generate(vkf_session* session, const uint32_t* prompt, size_t n_prompt,
                                const vkf_generate_params* params, uint32_t* tokens, size_t capacity,
                                vkf_generate_result* result);
/* The same from text (params->tokenizer required; tokenized with special tokens). */
VKF_API vkf_status vkf_generate_text(vkf_session* session, const char* prompt, size_t length,
                                     const vkf_generate_params* params, vkf_generate_result* result);
/* The logits of the last of `ids` run after the session's tokens ([vocab] floats; *n set). */
VKF_API vkf_status vkf_session_forward(vkf_session* session, const uint32_t* ids, size_t n_ids, float* logits,
                                       size_t capacity, size_t* n);

#ifdef __cplusplus
}
#endif

/* Batches (continuous batching) and embeddings (JinaBERT encoders): their own headers, on this
 * one's types. */
#include "vkformer_batch.h"
#include "vkformer_encoder.h"
/* Saving and loading a session's sequence: its own header too. */
#include "vkformer_state.h"

#endif /* VKFORMER_VKFORMER_H */
