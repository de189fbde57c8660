/* The C API with models/kjv-bloom and a tiny random JinaBERT encoder: memory estimate, loads
 * (progress, cancel, too big for forced limits), sessions, generation (streamed UTF-8 pieces,
 * stopping, cancelling, sampling), batches and embeddings, with every error path.
 * usage: test_capi_model MODEL_DIR ENCODER_DIR */
#include "check.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
    int calls;
    uint64_t last_done, total;
    int cancel_at;
} progress_state;

static int on_progress(uint64_t done, uint64_t total, void* user_data) {
    progress_state* s = user_data;
    s->calls++;
    s->last_done = done;
    s->total = total;
    return s->cancel_at != 0 && s->calls >= s->cancel_at;
}

static vkf_model* test_load(vkf_context* ctx, const char* dir) {
    vkf_model* model = NULL;
    vkf_model_params p = vkf_model_default_params();
    vkf_memory_estimate e;
    progress_state progress = {0, 0, 0, 1};
    vkf_cancel* cancel = NULL;
    memset(&e, 0, sizeof e);
    e.struct_size = sizeof e;
    p.max_tokens = 64;
    EXPECT_OK(vkf_model_estimate_memory(ctx, dir, &p, &e));
    CHECK(e.weights > 1000000 && e.kv_cache > 0 && e.total == e.weights + e.kv_cache + e.activations && e.fits);
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_model_estimate_memory(NULL, dir, &p, &e));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_model_estimate_memory(ctx, dir, &p, NULL));
    EXPECT_STATUS(VKF_ERROR_IO, vkf_model_estimate_memory(ctx, "/no/such/model", &p, &e));
    {
        /* A q8_0 K / q4_0 V cache: 34 + 18 bytes per head of 32 against fp16's 2 x 64 (the scales
           packed per key row). */
        vkf_memory_estimate q;
        const uint64_t f16_cache = e.kv_cache;
        memset(&q, 0, sizeof q);
        q.struct_size = sizeof q;
        p.kv_k = VKF_KV_Q8_0;
        p.kv_v = VKF_KV_Q4_0;
        EXPECT_OK(vkf_model_estimate_memory(ctx, dir, &p, &q));
        CHECK(q.kv_cache * 128 == f16_cache * 52 && q.weights == e.weights);
        p.kv_v = 7;
        EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_model_estimate_memory(ctx, dir, &p, &q));
        EXPECT_MESSAGE("params.kv_v");
        p.kv_k = p.kv_v = VKF_KV_DENSE;
    }

    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_model_load(NULL, dir, &p, &model));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_model_load(ctx, NULL, &p, &model));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_model_load(ctx, dir, &p, NULL));
    EXPECT_STATUS(VKF_ERROR_IO, vkf_model_load(ctx, "/no/such/model", &p, &model));
    EXPECT_MESSAGE("/no/such/model");
    EXPECT_STATUS(VKF_ERROR_IO, vkf_model_load(ctx, "/", &p, &model));
    EXPECT_MESSAGE("config.json");
    p.weights = 99;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_model_load(ctx, dir, &p, &model));
    p = vkf_model_default_params();
    p.struct_size = 4;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_model_load(ctx, dir, &p, &model));

    /* Cancelled by the progress callback after its first tensor, and by a flag set before. */
    p = vkf_model_default_params();
    p.progress = on_progress;
    p.progress_user_data = &progress;
    EXPECT_STATUS(VKF_ERROR_CANCELLED, vkf_model_load(ctx, dir, &p, &model));
    CHECK(progress.calls == 1 && model == NULL);
    EXPECT_OK(vkf_cancel_create(&cancel));
    EXPECT_OK(vkf_cancel_request(cancel));
    p.cancel = cancel;
    EXPECT_STATUS(VKF_ERROR_CANCELLED, vkf_model_load(ctx, dir, &p, &model));
    EXPECT_OK(vkf_cancel_free(cancel));
    p.cancel = cancel; /* freed: refused, not read */
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_model_load(ctx, dir, &p, &model));
    CHECK(model == NULL);

    p.cancel = NULL;
    p.max_tokens = 64;
    progress.calls = 0;
    progress.cancel_at = 0;
    EXPECT_OK(vkf_model_load(ctx, dir, &p, &model));
    CHECK(progress.calls > 4 && progress.last_done == progress.total && progress.total > 1000000);
    return model;
}

static void test_too_big(const char* dir) {
    /* 2 MiB of device memory and no host fallback: the 8 MiB checkpoint cannot fit. */
    vkf_context* small = make_context("device_heap=2M,host_heap=1");
    vkf_model* model = NULL;
    vkf_memory_estimate e;
    memset(&e, 0, sizeof e);
    e.struct_size = sizeof e;
    EXPECT_OK(vkf_model_estimate_memory(small, dir, NULL, &e));
    CHECK(!e.fits && e.available <= (2u << 20) + 1);
    EXPECT_STATUS(VKF_ERROR_OUT_OF_MEMORY, vkf_model_load(small, dir, NULL, &model));
    CHECK(model == NULL);
    EXPECT_OK(vkf_context_free(small));
}

static void test_info(const vkf_model* model) {
    vkf_model_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    EXPECT_OK(vkf_model_get_info(model, &info));
    CHECK(strcmp(info.family, "bloom") == 0 && info.vocab_size == 4096 && info.hidden_size == 256);
    CHECK(info.n_layer == 4 && info.n_head == 8 && info.n_kv_head == 8 && info.weight_bytes > 0);
    CHECK(info.n_eos == 1 && info.eos[0] == 2 && info.bos == 1);
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_model_get_info(model, NULL));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_model_get_info(NULL, &info));
}

typedef struct {
    char text[4096];
    size_t length;
    uint32_t tokens[64];
    int n, stop_at, final_calls;
    vkf_cancel* cancel_at_2;
} stream_state;

static int on_token(uint32_t token, const char* text, size_t length, void* user_data) {
    stream_state* s = user_data;
    if (text != NULL && s->length + length < sizeof s->text) {
        CHECK(strlen(text) == length);
        memcpy(s->text + s->length, text, length + 1);
        s->length += length;
    }
    if (token == VKF_TOKEN_NONE) {
        s->final_calls++;
        return 0;
    }
    s->tokens[s->n++] = token;
    if (s->cancel_at_2 != NULL && s->n == 2) {
        vkf_cancel_request(s->cancel_at_2);
    }
    return s->stop_at != 0 && s->n >= s->stop_at;
}

static uint32_t argmax(const float* x, size_t n) {
    uint32_t best = 0;
    for (size_t i = 1; i < n; i++) {
        if (x[i] > x[best]) {
            best = (uint32_t)i;
        }
    }
    return best;
}

/* Greedy generation of 8 tokens from `prompt`, checked against the session's own logits
 * (the first token is their argmax) and the tokenizer (the streamed pieces are the text of
 * the tokens). Returns the tokens in `out`. */
static void test_generation(vkf_model* model, const vkf_tokenizer* tok, const uint32_t* prompt, size_t n_prompt,
                            uint32_t* out) {
    vkf_session* session = NULL;
    vkf_session_params sp = vkf_session_default_params();
    vkf_generate_params gp = vkf_generate_default_params();
    vkf_sampling_params sampling = vkf_sampling_default_params();
    vkf_generate_result result;
    stream_state s;
    static float logits[4096];
    char text[4096];
    size_t n = 0, length = 0;
    uint32_t position = 0, again[8], v1_ids[8];
    vkf_cancel* cancel = NULL;

    sp.max_tokens = 0;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_session_create(model, &sp, &session));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_session_create(NULL, NULL, &session));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_session_create(model, NULL, NULL));
    sp = vkf_session_default_params();
    sp.max_tokens = 48;
    sp.kv_k = VKF_KV_Q4_0; /* a quantized side with an fp32 other side */
    sp.kv_f32 = 1;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_session_create(model, &sp, &session));
    sp.kv_k = VKF_KV_DENSE;
    sp.kv_f32 = 0;
    EXPECT_OK(vkf_session_create(model, &sp, &session));

    EXPECT_STATUS(VKF_ERROR_BUFFER_TOO_SMALL, vkf_session_forward(session, prompt, n_prompt, logits, 10, &n));
    CHECK(n == 4096);
    EXPECT_OK(vkf_session_forward(session, prompt, n_prompt, logits, 4096, &n));
    EXPECT_OK(vkf_session_position(session, &position));
    CHECK(position == n_prompt);
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_session_forward(session, NULL, 1, logits, 4096, &n));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_session_position(session, NULL));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_session_position(NULL, &position));
    EXPECT_OK(vkf_session_reset(session));
    EXPECT_OK(vkf_session_position(session, &position));
    CHECK(position == 0);

    memset(&s, 0, sizeof s);
    memset(&result, 0, sizeof result);
    result.struct_size = sizeof result;
    gp.max_new_tokens = 8;
    gp.use_model_eos = 0;
    gp.tokenizer = tok;
    gp.on_token = on_token;
    gp.user_data = &s;
    EXPECT_OK(vkf_generate(session, prompt, n_prompt, &gp, out, 8, &result));
    CHECK(result.n_prompt_tokens == n_prompt && result.n_tokens == 8 && result.stop == VKF_STOP_LENGTH);
    CHECK(s.n == 8 && memcmp(s.tokens, out, 8 * sizeof *out) == 0);
    CHECK(out[0] == argmax(logits, 4096));
    EXPECT_OK(vkf_detokenize(tok, out, 8, 1, text, sizeof text, &length));
    CHECK(length == s.length && strcmp(text, s.text) == 0);

    /* The callback stops it after 3 tokens; a cancel flag set during the 2nd stops it there. */
    EXPECT_OK(vkf_session_reset(session));
    memset(&s, 0, sizeof s);
    s.stop_at = 3;
    EXPECT_OK(vkf_generate(session, prompt, n_prompt, &gp, NULL, 0, &result));
    CHECK(result.n_tokens == 3 && result.stop == VKF_STOP_CALLBACK && s.n == 3);
    EXPECT_OK(vkf_session_reset(session));
    memset(&s, 0, sizeof s);
    EXPECT_OK(vkf_cancel_create(&cancel));
    s.cancel_at_2 = cancel;
    gp.cancel = cancel;
    EXPECT_OK(vkf_generate(session, prompt, n_prompt, &gp, NULL, 0, &result));
    CHECK(result.n_tokens == 2 && result.stop == VKF_STOP_CANCELLED);
    gp.cancel = NULL;
    EXPECT_OK(vkf_cancel_free(cancel));

    /* From text, without a token callback; a stop id (the 3rd token greedy gives) ends it. */
    EXPECT_OK(vkf_session_reset(session));
    gp.on_token = NULL;
    gp.stop_ids = &out[2];
    gp.n_stop_ids = 1;
    EXPECT_OK(vkf_generate_text(session, "And God said", 12, &gp, &result));
    CHECK(result.n_tokens >= 1 && result.n_tokens <= 8);
    gp.stop_ids = NULL;
    gp.n_stop_ids = 0;

    /* Seeded sampling repeats itself. */
    sampling.temperature = 0.8f;
    sampling.top_k = 40;
    sampling.top_p = 0.95f;
    sampling.seed = 42;
    gp.sampling = &sampling;
    EXPECT_OK(vkf_session_reset(session));
    EXPECT_OK(vkf_generate(session, prompt, n_prompt, &gp, again, 8, NULL));
    EXPECT_OK(vkf_session_reset(session));
    memset(&s, 0, sizeof s);
    gp.on_token = on_token;
    EXPECT_OK(vkf_generate(session, prompt, n_prompt, &gp, NULL, 0, NULL));
    CHECK(s.n == 8 && memcmp(s.tokens, again, sizeof again) == 0);

    /* A caller built against the first header (struct_size ending at seed) gets the defaults
     * of the fields appended since, whatever lies past its struct. */
    sampling.struct_size = offsetof(vkf_sampling_params, seed) + sizeof(uint64_t);
    sampling.min_p = 7.0f;
    sampling.n_logit_bias = 3;
    gp.on_token = NULL;
    EXPECT_OK(vkf_session_reset(session));
    EXPECT_OK(vkf_generate(session, prompt, n_prompt, &gp, v1_ids, 8, NULL));
    CHECK(memcmp(v1_ids, again, sizeof again) == 0);
    sampling = vkf_sampling_default_params();

    /* The whole chain: the same seed, the same ids; a bias ban moves greedy's first token. */
    {
        const vkf_logit_bias bias[2] = {{out[0], -100.0f}, {5, 1.5f}};
        uint32_t first[8], second[8];
        sampling.temperature = 0.8f;
        sampling.top_k = 40;
        sampling.typical_p = 0.95f;
        sampling.top_p = 0.9f;
        sampling.min_p = 0.02f;
        sampling.repetition_penalty = 1.15f;
        sampling.presence_penalty = 0.3f;
        sampling.frequency_penalty = 0.2f;
        sampling.penalty_last_n = 32;
        sampling.seed = 4242;
        EXPECT_OK(vkf_session_reset(session));
        EXPECT_OK(vkf_generate(session, prompt, n_prompt, &gp, first, 8, NULL));
        EXPECT_OK(vkf_session_reset(session));
        EXPECT_OK(vkf_generate(session, prompt, n_prompt, &gp, second, 8, NULL));
        CHECK(memcmp(first, second, sizeof first) == 0);
        sampling = vkf_sampling_default_params();
        sampling.logit_bias = bias;
        sampling.n_logit_bias = 2;
        EXPECT_OK(vkf_session_reset(session));
        EXPECT_OK(vkf_generate(session, prompt, n_prompt, &gp, first, 8, NULL));
        CHECK(first[0] != out[0]);
        sampling.logit_bias = NULL;
        EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_generate(session, prompt, n_prompt, &gp, NULL, 0, NULL));
        EXPECT_MESSAGE("logit_bias is NULL");
        {
            const vkf_logit_bias outside = {4096, 1.0f};
            sampling.logit_bias = &outside;
            sampling.n_logit_bias = 1;
            EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_generate(session, prompt, n_prompt, &gp, NULL, 0, NULL));
            EXPECT_MESSAGE("outside the vocabulary of 4096");
        }
        sampling = vkf_sampling_default_params();
        sampling.min_p = 1.5f;
        EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_generate(session, prompt, n_prompt, &gp, NULL, 0, NULL));
        EXPECT_MESSAGE("min_p");
        sampling = vkf_sampling_default_params();
        gp.on_token = on_token;
    }

    /* Misuse. */
    sampling.temperature = -1.0f;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_generate(session, prompt, n_prompt, &gp, NULL, 0, NULL));
    EXPECT_MESSAGE("temperature");
    sampling.struct_size = 1;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_generate(session, prompt, n_prompt, &gp, NULL, 0, NULL));
    gp.sampling = NULL;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_generate(session, prompt, 0, &gp, NULL, 0, NULL));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_generate(session, NULL, 3, &gp, NULL, 0, NULL));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_generate(session, prompt, n_prompt, &gp, NULL, 5, NULL));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_generate(NULL, prompt, n_prompt, &gp, NULL, 0, NULL));
    EXPECT_STATUS(VKF_ERROR_INVALID_UTF8, vkf_generate_text(session, "\xed\xa0\x80", 3, &gp, NULL));
    gp.tokenizer = NULL;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_generate_text(session, "And", 3, &gp, NULL));
    EXPECT_MESSAGE("tokenizer");
    gp.tokenizer = (const vkf_tokenizer*)session;
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_generate(session, prompt, n_prompt, &gp, NULL, 0, NULL));
    gp.tokenizer = NULL;
    gp.max_new_tokens = 0;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_generate(session, prompt, n_prompt, &gp, NULL, 0, NULL));
    gp.max_new_tokens = 60; /* over the session's 48 tokens: a full cache ends generation */
    EXPECT_OK(vkf_session_reset(session));
    memset(&result, 0, sizeof result);
    result.struct_size = sizeof result;
    EXPECT_OK(vkf_generate(session, prompt, n_prompt, &gp, NULL, 0, &result));
    /* 48 tokens fill the cache; the last id sampled from them needs no room. */
    CHECK(result.stop == VKF_STOP_CACHE_FULL && result.n_prompt_tokens + result.n_tokens == 49);
    EXPECT_OK(vkf_session_free(session));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_session_free(session));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_session_reset(session));
    EXPECT_OK(vkf_session_free(NULL));
}

/* Two greedy generations in one batch give what a session gave; a third is cancelled. */
static void test_batch(vkf_model* model, const uint32_t* prompt, size_t n_prompt, const uint32_t* expected) {
    vkf_batch* batch = NULL;
    vkf_batch_params bp = vkf_batch_default_params();
    vkf_generate_params gp = vkf_generate_default_params();
    stream_state s[3];
    uint64_t seq[3];
    vkf_batch_event events[4];
    size_t n = 0, pending = 0;
    int ended = 0, steps = 0;
    memset(s, 0, sizeof s);
    bp.max_tokens = 0;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_batch_create(model, &bp, &batch));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_batch_create(NULL, NULL, &batch));
    bp.max_tokens = 256;
    EXPECT_OK(vkf_batch_create(model, &bp, &batch));
    gp.max_new_tokens = 8;
    gp.use_model_eos = 0;
    gp.on_token = on_token;
    for (int i = 0; i < 3; i++) {
        gp.user_data = &s[i];
        EXPECT_OK(vkf_batch_submit(batch, prompt, n_prompt, &gp, &seq[i]));
    }
    EXPECT_OK(vkf_batch_cancel(batch, seq[2]));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_batch_cancel(batch, 12345));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_batch_submit(batch, prompt, 0, &gp, &seq[2]));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_batch_submit(batch, prompt, n_prompt, &gp, NULL));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_batch_step(batch, NULL, 2, &n));
    EXPECT_OK(vkf_batch_pending(batch, &pending));
    CHECK(pending == 3);
    while (steps++ < 40) {
        EXPECT_OK(vkf_batch_step(batch, events, 1, &n)); /* one event a call: the rest wait */
        for (size_t i = 0; i < n; i++) {
            ended++;
            if (events[i].sequence == seq[2]) {
                CHECK(events[i].stop == VKF_STOP_CANCELLED);
            } else {
                CHECK(events[i].stop == VKF_STOP_LENGTH && events[i].n_tokens == 8);
                CHECK(events[i].n_prompt_tokens == n_prompt);
            }
        }
        EXPECT_OK(vkf_batch_pending(batch, &pending));
        if (pending == 0) {
            break;
        }
    }
    CHECK(ended == 3 && pending == 0);
    CHECK(s[0].n == 8 && memcmp(s[0].tokens, expected, 8 * sizeof *expected) == 0);
    CHECK(s[1].n == 8 && memcmp(s[1].tokens, expected, 8 * sizeof *expected) == 0);
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_batch_pending(batch, NULL));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_batch_step(NULL, events, 1, &n));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_batch_submit(NULL, prompt, n_prompt, &gp, &seq[0]));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_batch_cancel(NULL, seq[0]));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_batch_pending(NULL, &pending));
    EXPECT_OK(vkf_batch_free(batch));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_batch_free(batch));
    EXPECT_OK(vkf_batch_free(NULL));
}

static void test_encoder(vkf_context* ctx, const char* encoder_dir, const char* decoder_dir) {
    vkf_encoder* enc = NULL;
    vkf_encoder_params p = vkf_encoder_default_params();
    uint32_t hidden = 0, ids[5] = {1, 17, 4, 99, 2};
    static float out[5 * 96];
    size_t n = 0;
    double norm = 0.0;
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_encoder_load(NULL, encoder_dir, &p, &enc));
    EXPECT_STATUS(VKF_ERROR_IO, vkf_encoder_load(ctx, "/no/such/encoder", &p, &enc));
    EXPECT_STATUS(VKF_ERROR_MODEL, vkf_encoder_load(ctx, decoder_dir, &p, &enc)); /* a BLOOM, not a JinaBERT */
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_encoder_load(ctx, encoder_dir, &p, NULL));
    p.weights = 77;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_encoder_load(ctx, encoder_dir, &p, &enc));
    p.weights = VKF_WEIGHTS_F32;
    EXPECT_OK(vkf_encoder_load(ctx, encoder_dir, &p, &enc));
    EXPECT_OK(vkf_encoder_hidden_size(enc, &hidden));
    CHECK(hidden == 96);
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_encoder_hidden_size(enc, NULL));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_encoder_hidden_size(NULL, &hidden));
    for (size_t i = 0; i < sizeof out / sizeof *out; i++) {
        out[i] = NAN; /* poisoned: every value read back must have been written */
    }
    EXPECT_OK(vkf_embed(enc, ids, 5, VKF_POOLING_MEAN, 1, out, 96, &n));
    CHECK(n == 96);
    for (size_t i = 0; i < 96; i++) {
        norm += (double)out[i] * out[i];
    }
    CHECK(fabs(norm - 1.0) < 1e-4);
    EXPECT_OK(vkf_embed(enc, ids, 5, VKF_POOLING_NONE, 0, out, 5 * 96, &n));
    CHECK(n == 5 * 96 && !isnan(out[5 * 96 - 1]));
    EXPECT_STATUS(VKF_ERROR_BUFFER_TOO_SMALL, vkf_embed(enc, ids, 5, VKF_POOLING_NONE, 0, out, 96, &n));
    CHECK(n == 5 * 96);
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_embed(enc, ids, 5, 7, 0, out, 96, &n));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_embed(enc, ids, 5, VKF_POOLING_CLS, 0, out, 96, NULL));
    EXPECT_STATUS(VKF_ERROR_MODEL, vkf_embed(enc, ids, 0, VKF_POOLING_CLS, 0, out, 96, &n));
    ids[1] = 512; /* outside the tiny vocabulary */
    EXPECT_STATUS(VKF_ERROR_MODEL, vkf_embed(enc, ids, 5, VKF_POOLING_CLS, 0, out, 96, &n));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_embed(NULL, ids, 5, VKF_POOLING_CLS, 0, out, 96, &n));
    EXPECT_OK(vkf_encoder_free(enc));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_encoder_free(enc));
    EXPECT_OK(vkf_encoder_free(NULL));
}

int main(int argc, char** argv) {
    vkf_context* ctx = NULL;
    vkf_model* model = NULL;
    vkf_tokenizer* tok = NULL;
    vkf_session* session = NULL;
    uint32_t prompt[16], tokens[8];
    size_t n_prompt = 0;
    const char* text = "In the beginning God created";
    if (argc != 3) {
        fprintf(stderr, "usage: test_capi_model MODEL_DIR ENCODER_DIR\n");
        return 2;
    }
    ctx = make_context(NULL);
    model = test_load(ctx, argv[1]);
    test_too_big(argv[1]);
    test_info(model);
    EXPECT_OK(vkf_tokenizer_load(argv[1], &tok));
    EXPECT_OK(vkf_tokenize(tok, text, strlen(text), 0, prompt, 16, &n_prompt));
    test_generation(model, tok, prompt, n_prompt, tokens);
    test_batch(model, prompt, n_prompt, tokens);
    test_encoder(ctx, argv[2], argv[1]);
    /* Any free order: the model keeps the context, a session the model. */
    EXPECT_OK(vkf_context_free(ctx));
    EXPECT_OK(vkf_session_create(model, NULL, &session));
    EXPECT_OK(vkf_model_free(model));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_model_free(model));
    EXPECT_OK(vkf_generate(session, prompt, n_prompt, NULL, NULL, 0, NULL));
    EXPECT_OK(vkf_session_free(session));
    EXPECT_OK(vkf_tokenizer_free(tok));
    CHECK(validation_messages == 0);
    if (check_failures != 0) {
        fprintf(stderr, "test_capi_model: %d checks failed\n", check_failures);
        return 1;
    }
    printf("test_capi_model: all checks passed\n");
    return 0;
}
