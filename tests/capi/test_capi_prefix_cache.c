/* The prefix cache through the C API (issue 42): a session with prefix_cache, reset and given
 * its earlier prompt plus one token, reports most of the prompt as n_cached_tokens and
 * generates the greedy ids of a session without the cache; a batch with prefix_cache reports
 * a later generation's cached tokens (vkf_batch_cached_tokens) and the same ids; without
 * prefix_cache nothing is cached.
 * usage: test_capi_prefix_cache MODEL_DIR (models/kjv-bloom) */
#include "check.h"

#include <stdint.h>
#include <stdlib.h>

enum { kPrompt = 70, kNew = 6 };

/* The greedy ids of `prompt` in a session (reset first), and its result. */
static vkf_generate_result session_run(vkf_session* session, const uint32_t* prompt, size_t n, uint32_t* ids) {
    vkf_generate_params gp = vkf_generate_default_params();
    vkf_generate_result result;
    memset(&result, 0, sizeof result);
    result.struct_size = sizeof result;
    gp.max_new_tokens = kNew;
    gp.use_model_eos = 0;
    EXPECT_OK(vkf_session_reset(session));
    EXPECT_OK(vkf_generate(session, prompt, n, &gp, ids, kNew, &result));
    return result;
}

static void test_session(vkf_model* model, const uint32_t* prompt) {
    vkf_session *cold = NULL, *warm = NULL;
    vkf_session_params sp = vkf_session_default_params();
    uint32_t cold_ids[kNew], warm_ids[kNew];
    vkf_generate_result r;
    sp.max_tokens = 160;
    EXPECT_OK(vkf_session_create(model, &sp, &cold));
    sp.prefix_cache = 1;
    EXPECT_OK(vkf_session_create(model, &sp, &warm));
    r = session_run(cold, prompt, kPrompt - 1, cold_ids);
    CHECK(r.n_cached_tokens == 0);
    r = session_run(cold, prompt, kPrompt, cold_ids);
    CHECK(r.n_cached_tokens == 0); /* without prefix_cache the reset forgets */

    r = session_run(warm, prompt, kPrompt - 1, warm_ids);
    CHECK(r.n_cached_tokens == 0);
    r = session_run(warm, prompt, kPrompt, warm_ids);
    /* 69 tokens computed: 4 whole blocks of 16 cached, and the next prompt takes them. */
    CHECK(r.n_prompt_tokens == kPrompt && r.n_cached_tokens == 64);
    CHECK(memcmp(cold_ids, warm_ids, sizeof cold_ids) == 0);
    /* A later turn of the same sequence takes nothing from the cache. */
    {
        vkf_generate_params gp = vkf_generate_default_params();
        vkf_generate_result next;
        memset(&next, 0, sizeof next);
        next.struct_size = sizeof next;
        gp.max_new_tokens = 2;
        EXPECT_OK(vkf_generate(warm, prompt, 4, &gp, NULL, 0, &next));
        CHECK(next.n_cached_tokens == 0);
    }
    EXPECT_OK(vkf_session_free(cold));
    EXPECT_OK(vkf_session_free(warm));
}

typedef struct collected {
    uint32_t ids[kNew];
    size_t n;
} collected;

static int collect(uint32_t token, const char* text, size_t length, void* user_data) {
    collected* c = (collected*)user_data;
    (void)text;
    (void)length;
    if (token != VKF_TOKEN_NONE && c->n < kNew) {
        c->ids[c->n++] = token;
    }
    return 0;
}

/* Runs one generation of `prompt` alone in the batch to its end; its cached tokens. */
static uint32_t batch_run(vkf_batch* batch, const uint32_t* prompt, size_t n, collected* out) {
    vkf_generate_params gp = vkf_generate_default_params();
    vkf_batch_event events[2];
    uint64_t seq = 0;
    uint32_t cached = 12345;
    size_t ended = 0, pending = 1;
    int steps = 0;
    gp.max_new_tokens = kNew;
    gp.use_model_eos = 0;
    gp.on_token = collect;
    gp.user_data = out;
    EXPECT_OK(vkf_batch_submit(batch, prompt, n, &gp, &seq));
    EXPECT_OK(vkf_batch_cached_tokens(batch, seq, &cached));
    while (pending != 0 && steps++ < 40) {
        EXPECT_OK(vkf_batch_step(batch, events, 2, &ended));
        EXPECT_OK(vkf_batch_pending(batch, &pending));
    }
    CHECK(pending == 0 && out->n == kNew);
    /* Reported: no longer known. */
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_batch_cached_tokens(batch, seq, &cached));
    return cached;
}

static void test_batch(vkf_model* model, const uint32_t* prompt) {
    vkf_batch *cold = NULL, *warm = NULL;
    vkf_batch_params bp = vkf_batch_default_params();
    collected a, b;
    uint32_t cached = 0;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    bp.max_tokens = 256;
    EXPECT_OK(vkf_batch_create(model, &bp, &cold));
    bp.prefix_cache = 1;
    EXPECT_OK(vkf_batch_create(model, &bp, &warm));
    CHECK(batch_run(cold, prompt, kPrompt - 1, &a) == 0);
    memset(&a, 0, sizeof a);
    CHECK(batch_run(cold, prompt, kPrompt, &a) == 0);
    CHECK(batch_run(warm, prompt, kPrompt - 1, &b) == 0);
    memset(&b, 0, sizeof b);
    CHECK(batch_run(warm, prompt, kPrompt, &b) == 64);
    CHECK(memcmp(a.ids, b.ids, sizeof a.ids) == 0);
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_batch_cached_tokens(warm, 999, &cached));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_batch_cached_tokens(warm, 1, NULL));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_batch_cached_tokens(NULL, 1, &cached));
    EXPECT_OK(vkf_batch_free(cold));
    EXPECT_OK(vkf_batch_free(warm));
}

int main(int argc, char** argv) {
    vkf_context* ctx = NULL;
    vkf_model* model = NULL;
    uint32_t prompt[kPrompt];
    if (argc != 2) {
        fprintf(stderr, "usage: test_capi_prefix_cache MODEL_DIR\n");
        return 2;
    }
    /* Ids from the vocabulary's word range, fixed by a small LCG. */
    for (uint32_t i = 0, x = 7; i < kPrompt; i++) {
        x = x * 1103515245u + 12345u;
        prompt[i] = 200 + (x >> 16) % 3000;
    }
    ctx = make_context(NULL);
    EXPECT_OK(vkf_model_load(ctx, argv[1], NULL, &model));
    test_session(model, prompt);
    test_batch(model, prompt);
    EXPECT_OK(vkf_model_free(model));
    EXPECT_OK(vkf_context_free(ctx));
    CHECK(validation_messages == 0);
    if (check_failures != 0) {
        fprintf(stderr, "test_capi_prefix_cache: %d checks failed\n", check_failures);
        return 1;
    }
    printf("test_capi_prefix_cache: all checks passed\n");
    return 0;
}
