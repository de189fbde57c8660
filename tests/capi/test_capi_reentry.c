/* The C API against an application that misuses it: a token callback calling back into its
 * own session or batch (generate, reset, forward, free) or freeing the tokenizer or cancel
 * flag its generation uses, a second thread using a session while it generates, and sizes and
 * stop ids out of range. Each is refused with a status and a message, and the generation
 * under way gives the tokens it gives undisturbed.
 * usage: test_capi_reentry MODEL_DIR (models/kjv-bloom) */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "check.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

enum { kTokens = 8 };

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

typedef struct {
    vkf_session* session;
    vkf_session* other; /* another session: usable from the callback */
    vkf_batch* batch;   /* the batch generating, for the batch's callback */
    vkf_tokenizer* tok; /* the generation's tokenizer */
    vkf_cancel* cancel; /* and cancel flag */
    uint64_t sequence;  /* the batch's generation */
    const uint32_t* prompt;
    size_t n_prompt;
    uint32_t tokens[kTokens];
    int n;
    int reenter_at;   /* the token count at which the callback calls into its own handle */
    atomic_int phase; /* two threads: 1 the callback waits, 2 the other thread is done */
} callback_state;

static vkf_generate_params greedy(uint32_t max_new_tokens) {
    vkf_generate_params gp = vkf_generate_default_params();
    gp.max_new_tokens = max_new_tokens;
    gp.use_model_eos = 0;
    return gp;
}

static int record(callback_state* s, uint32_t token) {
    if (token != VKF_TOKEN_NONE && s->n < kTokens) {
        s->tokens[s->n++] = token;
    }
    return s->n == s->reenter_at;
}

/* Every call on its own session from the callback is refused but the position; another
 * session works. The free comes last: before the fix it returned VKF_OK and the generation
 * went on in freed memory. */
static int reenter_session(uint32_t token, const char* text, size_t length, void* user_data) {
    callback_state* s = user_data;
    (void)text, (void)length;
    if (!record(s, token)) {
        return 0;
    }
    vkf_generate_params gp = greedy(2);
    uint32_t position = 0, out[2];
    size_t n = 0;
    static float logits[4096];
    EXPECT_STATUS(VKF_ERROR_BUSY, vkf_generate(s->session, s->prompt, s->n_prompt, &gp, out, 2, NULL));
    EXPECT_MESSAGE("own callback");
    gp.tokenizer = s->tok;
    EXPECT_STATUS(VKF_ERROR_BUSY, vkf_generate_text(s->session, "And", 3, &gp, NULL));
    gp.tokenizer = NULL;
    EXPECT_STATUS(VKF_ERROR_BUSY, vkf_session_reset(s->session));
    EXPECT_STATUS(VKF_ERROR_BUSY, vkf_session_forward(s->session, s->prompt, 1, logits, 4096, &n));
    EXPECT_OK(vkf_session_position(s->session, &position));
    CHECK(position >= s->n_prompt);
    EXPECT_OK(vkf_session_reset(s->other));
    EXPECT_OK(vkf_generate(s->other, s->prompt, s->n_prompt, &gp, out, 2, NULL));
    CHECK(out[0] == s->tokens[0]);
    /* What the generation uses: freed, it would go on reading freed memory. */
    EXPECT_STATUS(VKF_ERROR_BUSY, vkf_tokenizer_free(s->tok));
    EXPECT_MESSAGE("in use by a generation");
    EXPECT_STATUS(VKF_ERROR_BUSY, vkf_cancel_free(s->cancel));
    EXPECT_STATUS(VKF_ERROR_BUSY, vkf_session_free(s->session));
    EXPECT_MESSAGE("freeing it from its own callback");
    return 0;
}

static void test_session_reentry(vkf_model* model, vkf_tokenizer* tok, const uint32_t* prompt, size_t n_prompt,
                                 uint32_t* expected) {
    vkf_session_params sp = vkf_session_default_params();
    vkf_generate_params gp = greedy(kTokens);
    vkf_generate_result result;
    callback_state s;
    uint32_t tokens[kTokens];
    memset(&s, 0, sizeof s);
    sp.max_tokens = 64;
    EXPECT_OK(vkf_session_create(model, &sp, &s.session));
    EXPECT_OK(vkf_session_create(model, &sp, &s.other));
    EXPECT_OK(vkf_generate(s.session, prompt, n_prompt, &gp, expected, kTokens, NULL));

    EXPECT_OK(vkf_session_reset(s.session));
    s.prompt = prompt;
    s.n_prompt = n_prompt;
    s.tok = tok;
    s.reenter_at = 3;
    EXPECT_OK(vkf_cancel_create(&s.cancel));
    gp.on_token = reenter_session;
    gp.user_data = &s;
    gp.tokenizer = tok;
    gp.cancel = s.cancel;
    memset(&result, 0, sizeof result);
    result.struct_size = sizeof result;
    /* VKF_OK with an empty message: the refusals in the callback do not leak out. */
    EXPECT_OK(vkf_generate(s.session, prompt, n_prompt, &gp, tokens, kTokens, &result));
    CHECK(result.n_tokens == kTokens && result.stop == VKF_STOP_LENGTH && s.n == kTokens);
    CHECK(memcmp(tokens, expected, sizeof tokens) == 0);
    CHECK(memcmp(s.tokens, expected, sizeof tokens) == 0);
    EXPECT_OK(vkf_session_free(s.session)); /* after the call: freed */
    EXPECT_OK(vkf_session_free(s.other));
    EXPECT_OK(vkf_cancel_free(s.cancel));
}

/* Two threads on one session: the second is refused while the first generates, whose
 * callback waits until the second thread has tried everything. */
static int wait_for_other_thread(uint32_t token, const char* text, size_t length, void* user_data) {
    callback_state* s = user_data;
    (void)text, (void)length;
    if (record(s, token)) {
        atomic_store(&s->phase, 1);
        for (int waited = 0; atomic_load(&s->phase) != 2 && waited < 60000; waited += 5) {
            sleep_ms(5);
        }
    }
    return 0;
}

static void* other_thread(void* user_data) {
    callback_state* s = user_data;
    vkf_generate_params gp = greedy(2);
    uint32_t position = 0;
    for (int waited = 0; atomic_load(&s->phase) != 1 && waited < 60000; waited += 5) {
        sleep_ms(5);
    }
    CHECK(atomic_load(&s->phase) == 1);
    EXPECT_STATUS(VKF_ERROR_BUSY, vkf_generate(s->session, s->prompt, s->n_prompt, &gp, NULL, 0, NULL));
    EXPECT_MESSAGE("another thread");
    EXPECT_STATUS(VKF_ERROR_BUSY, vkf_session_reset(s->session));
    EXPECT_STATUS(VKF_ERROR_BUSY, vkf_session_position(s->session, &position));
    EXPECT_STATUS(VKF_ERROR_BUSY, vkf_session_free(s->session));
    atomic_store(&s->phase, 2);
    return NULL;
}

static void test_two_threads(vkf_model* model, const uint32_t* prompt, size_t n_prompt, const uint32_t* expected) {
    vkf_generate_params gp = greedy(kTokens);
    callback_state s;
    pthread_t thread;
    uint32_t tokens[kTokens];
    memset(&s, 0, sizeof s);
    atomic_init(&s.phase, 0);
    s.prompt = prompt;
    s.n_prompt = n_prompt;
    s.reenter_at = 2;
    EXPECT_OK(vkf_session_create(model, NULL, &s.session));
    CHECK(pthread_create(&thread, NULL, other_thread, &s) == 0);
    gp.on_token = wait_for_other_thread;
    gp.user_data = &s;
    EXPECT_OK(vkf_generate(s.session, prompt, n_prompt, &gp, tokens, kTokens, NULL));
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK(atomic_load(&s.phase) == 2 && memcmp(tokens, expected, sizeof tokens) == 0);
    EXPECT_OK(vkf_session_free(s.session));
}

/* A batch's callbacks run in vkf_batch_step: its other calls on the batch are refused. */
static int reenter_batch(uint32_t token, const char* text, size_t length, void* user_data) {
    callback_state* s = user_data;
    (void)text, (void)length;
    if (!record(s, token)) {
        return 0;
    }
    vkf_generate_params gp = greedy(2);
    uint64_t sequence = 0;
    size_t n = 0;
    vkf_batch_event events[2];
    EXPECT_STATUS(VKF_ERROR_BUSY, vkf_batch_submit(s->batch, s->prompt, s->n_prompt, &gp, &sequence));
    EXPECT_MESSAGE("own callback");
    EXPECT_STATUS(VKF_ERROR_BUSY, vkf_batch_step(s->batch, events, 2, &n));
    EXPECT_STATUS(VKF_ERROR_BUSY, vkf_batch_cancel(s->batch, s->sequence));
    EXPECT_OK(vkf_batch_pending(s->batch, &n));
    CHECK(n == 1);
    EXPECT_STATUS(VKF_ERROR_BUSY, vkf_batch_free(s->batch));
    return 0;
}

static void test_batch_reentry(vkf_model* model, vkf_tokenizer* tok, const uint32_t* prompt, size_t n_prompt,
                               const uint32_t* expected) {
    vkf_generate_params gp = greedy(kTokens);
    callback_state s;
    vkf_batch_event events[2];
    size_t n = 0, pending = 1;
    memset(&s, 0, sizeof s);
    s.prompt = prompt;
    s.n_prompt = n_prompt;
    s.reenter_at = 3;
    EXPECT_OK(vkf_batch_create(model, NULL, &s.batch));
    gp.on_token = reenter_batch;
    gp.user_data = &s;
    gp.tokenizer = tok;
    EXPECT_OK(vkf_batch_submit(s.batch, prompt, n_prompt, &gp, &s.sequence));
    /* The header asks the tokenizer to outlive the generation: now it is made to. */
    EXPECT_STATUS(VKF_ERROR_BUSY, vkf_tokenizer_free(tok));
    for (int steps = 0; pending != 0 && steps < 40; steps++) {
        EXPECT_OK(vkf_batch_step(s.batch, events, 2, &n));
        EXPECT_OK(vkf_batch_pending(s.batch, &pending));
    }
    CHECK(pending == 0 && s.n == kTokens && memcmp(s.tokens, expected, sizeof s.tokens) == 0);
    EXPECT_OK(vkf_batch_free(s.batch));
}

/* Sizes whose block count overflowed, and stop ids the model cannot produce. */
static void test_limits(vkf_model* model, const uint32_t* prompt, size_t n_prompt) {
    vkf_session_params sp = vkf_session_default_params();
    vkf_batch_params bp = vkf_batch_default_params();
    vkf_generate_params gp = greedy(4);
    vkf_session* session = NULL;
    vkf_batch* batch = NULL;
    uint64_t sequence = 0;
    uint32_t stops[2] = {2, 4096};
    sp.max_tokens = 0xffffffffu;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_session_create(model, &sp, &session));
    EXPECT_MESSAGE("params.max_tokens is 4294967295, over the limit of 2147483647 tokens");
    CHECK(session == NULL);
    sp.max_tokens = 0x7fffffffu; /* the limit: refused by the device's limits, not a crash */
    CHECK(vkf_session_create(model, &sp, &session) != VKF_OK && session == NULL);
    bp.max_tokens = 0xfffffff9u;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_batch_create(model, &bp, &batch));
    EXPECT_MESSAGE("params.max_tokens is 4294967289, over the limit of 2147483647 tokens");
    CHECK(batch == NULL);

    EXPECT_OK(vkf_session_create(model, NULL, &session));
    gp.stop_ids = stops;
    gp.n_stop_ids = 2;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_generate(session, prompt, n_prompt, &gp, NULL, 0, NULL));
    EXPECT_MESSAGE("params.stop_ids[1] is 4096, not below the model's vocabulary size 4096");
    EXPECT_OK(vkf_batch_create(model, NULL, &batch));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_batch_submit(batch, prompt, n_prompt, &gp, &sequence));
    EXPECT_MESSAGE("params.stop_ids[1] is 4096");
    stops[1] = 4095; /* the last id of the vocabulary: accepted */
    EXPECT_OK(vkf_generate(session, prompt, n_prompt, &gp, NULL, 0, NULL));
    EXPECT_OK(vkf_batch_free(batch));
    EXPECT_OK(vkf_session_free(session));
}

int main(int argc, char** argv) {
    vkf_context* ctx = NULL;
    vkf_model* model = NULL;
    vkf_tokenizer* tok = NULL;
    uint32_t prompt[16], expected[kTokens];
    size_t n_prompt = 0;
    const char* text = "In the beginning God created";
    if (argc != 2) {
        fprintf(stderr, "usage: test_capi_reentry MODEL_DIR\n");
        return 2;
    }
    ctx = make_context(NULL);
    EXPECT_OK(vkf_model_load(ctx, argv[1], NULL, &model));
    EXPECT_OK(vkf_tokenizer_load(argv[1], &tok));
    EXPECT_OK(vkf_tokenize(tok, text, strlen(text), 0, prompt, 16, &n_prompt));
    if (check_failures != 0) {
        return 1;
    }
    test_limits(model, prompt, n_prompt);
    test_session_reentry(model, tok, prompt, n_prompt, expected);
    test_two_threads(model, prompt, n_prompt, expected);
    test_batch_reentry(model, tok, prompt, n_prompt, expected);
    EXPECT_OK(vkf_tokenizer_free(tok));
    EXPECT_OK(vkf_model_free(model));
    EXPECT_OK(vkf_context_free(ctx));
    CHECK(validation_messages == 0);
    if (check_failures != 0) {
        fprintf(stderr, "test_capi_reentry: %d checks failed\n", check_failures);
        return 1;
    }
    printf("test_capi_reentry: all checks passed\n");
    return 0;
}
