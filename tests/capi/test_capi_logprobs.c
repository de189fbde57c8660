/* vkf_generate_params.on_logprobs (issue 43, docs/API.md "Log-probabilities"): each generated
 * token's log-probability and the top N equal log_softmax, in double, of the logits that
 * vkf_session_forward gives for the same tokens in another session; greedy picks the top-1
 * entry; a sampled token's logprob is the model's own (before temperature and logit_bias); a
 * batch gives them too; n_logprobs without a callback or over the vocabulary is refused.
 * usage: test_capi_logprobs MODEL_DIR (models/kjv-bloom) */
#include "check.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

enum { kNew = 5, kTop = 4 };

typedef struct recorded {
    size_t calls;
    int in_order;
    vkf_logprob chosen[kNew];
    vkf_logprob top[kNew][kTop];
    size_t n_top[kNew];
} recorded;

static void on_logprobs(uint32_t index, const vkf_logprob* chosen, const vkf_logprob* top, size_t n_top, void* data) {
    recorded* r = (recorded*)data;
    if (index != r->calls || index >= kNew || n_top > kTop) {
        r->in_order = 0;
        r->calls++;
        return;
    }
    r->chosen[index] = *chosen;
    memcpy(r->top[index], top, n_top * sizeof *top);
    r->n_top[index] = n_top;
    r->calls++;
}

/* log_softmax of `logits` in double, into `out`. */
static void log_softmax(const float* logits, size_t n, double* out) {
    double max = logits[0], sum = 0.0;
    for (size_t i = 1; i < n; ++i) {
        max = logits[i] > max ? logits[i] : max;
    }
    for (size_t i = 0; i < n; ++i) {
        sum += exp((double)logits[i] - max);
    }
    for (size_t i = 0; i < n; ++i) {
        out[i] = (double)logits[i] - max - log(sum);
    }
}

/* The recorded logprobs against the reference: the prompt, then each generated id before the
 * one whose logprobs are checked, run through vkf_session_forward in a fresh session. */
static void check_against_forward(vkf_model* model, const uint32_t* prompt, size_t n_prompt, const uint32_t* ids,
                                  const recorded* r, int greedy) {
    vkf_session* ref = NULL;
    vkf_model_info info;
    size_t vocab = 0;
    float* logits = NULL;
    double* lp = NULL;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    EXPECT_OK(vkf_model_get_info(model, &info));
    vocab = info.vocab_size;
    EXPECT_OK(vkf_session_create(model, NULL, &ref));
    logits = (float*)malloc(vocab * sizeof *logits);
    lp = (double*)malloc(vocab * sizeof *lp);
    for (size_t i = 0; i < kNew; ++i) {
        size_t n = 0;
        double sum = 0.0;
        if (i == 0) {
            EXPECT_OK(vkf_session_forward(ref, prompt, n_prompt, logits, vocab, &n));
        } else {
            EXPECT_OK(vkf_session_forward(ref, &ids[i - 1], 1, logits, vocab, &n));
        }
        log_softmax(logits, vocab, lp);
        CHECK(r->chosen[i].token == ids[i]);
        CHECK(fabs(r->chosen[i].logprob - lp[ids[i]]) < 1e-3);
        CHECK(r->n_top[i] == kTop);
        for (size_t k = 0; k < r->n_top[i]; ++k) {
            const vkf_logprob t = r->top[i][k];
            CHECK(t.token < vocab && t.logprob <= 0.0);
            CHECK(fabs(t.logprob - lp[t.token]) < 1e-3);
            CHECK(k == 0 || t.logprob <= r->top[i][k - 1].logprob);
            sum += exp(t.logprob);
        }
        CHECK(sum <= 1.0 + 1e-9);
        /* No token outside the top N is more likely than its last entry. */
        for (size_t v = 0; v < vocab; ++v) {
            int listed = 0;
            for (size_t k = 0; k < r->n_top[i]; ++k) {
                listed |= r->top[i][k].token == v;
            }
            CHECK(listed || lp[v] <= r->top[i][kTop - 1].logprob + 1e-3);
        }
        if (greedy) {
            CHECK(r->top[i][0].token == ids[i] && r->top[i][0].logprob == r->chosen[i].logprob);
        }
    }
    free(lp);
    free(logits);
    EXPECT_OK(vkf_session_free(ref));
}

static void test_session(vkf_model* model, const uint32_t* prompt, size_t n_prompt, const vkf_sampling_params* sp) {
    vkf_session* session = NULL;
    vkf_generate_params gp = vkf_generate_default_params();
    recorded r;
    uint32_t ids[kNew];
    memset(&r, 0, sizeof r);
    r.in_order = 1;
    gp.max_new_tokens = kNew;
    gp.use_model_eos = 0;
    gp.sampling = sp;
    gp.on_logprobs = on_logprobs;
    gp.n_logprobs = kTop;
    gp.user_data = &r;
    EXPECT_OK(vkf_session_create(model, NULL, &session));
    EXPECT_OK(vkf_generate(session, prompt, n_prompt, &gp, ids, kNew, NULL));
    CHECK(r.in_order && r.calls == kNew);
    check_against_forward(model, prompt, n_prompt, ids, &r, sp == NULL);
    EXPECT_OK(vkf_session_free(session));
}

static void test_batch(vkf_model* model, const uint32_t* prompt, size_t n_prompt) {
    vkf_batch* batch = NULL;
    vkf_generate_params gp = vkf_generate_default_params();
    vkf_batch_event event;
    recorded r;
    uint64_t seq = 0;
    size_t ended = 0;
    memset(&r, 0, sizeof r);
    r.in_order = 1;
    gp.max_new_tokens = kNew;
    gp.use_model_eos = 0;
    gp.on_logprobs = on_logprobs;
    gp.n_logprobs = kTop;
    gp.user_data = &r;
    EXPECT_OK(vkf_batch_create(model, NULL, &batch));
    EXPECT_OK(vkf_batch_submit(batch, prompt, n_prompt, &gp, &seq));
    for (int steps = 0; ended == 0 && steps < 64; ++steps) {
        EXPECT_OK(vkf_batch_step(batch, &event, 1, &ended));
    }
    CHECK(ended == 1 && event.n_tokens == kNew);
    CHECK(r.in_order && r.calls == kNew);
    for (size_t i = 0; i < kNew; ++i) {
        CHECK(r.top[i][0].token == r.chosen[i].token);
    }
    EXPECT_OK(vkf_batch_free(batch));
}

int main(int argc, char** argv) {
    vkf_context* ctx = NULL;
    vkf_model* model = NULL;
    vkf_tokenizer* tok = NULL;
    vkf_session* session = NULL;
    vkf_generate_params gp = vkf_generate_default_params();
    vkf_sampling_params sp = vkf_sampling_default_params();
    vkf_logit_bias bias;
    uint32_t prompt[16], ids[2];
    size_t n_prompt = 0;
    if (argc != 2) {
        fprintf(stderr, "usage: test_capi_logprobs MODEL_DIR\n");
        return 2;
    }
    ctx = make_context(NULL);
    EXPECT_OK(vkf_model_load(ctx, argv[1], NULL, &model));
    EXPECT_OK(vkf_tokenizer_load(argv[1], &tok));
    EXPECT_OK(vkf_tokenize(tok, "And God said", 12, 0, prompt, 16, &n_prompt));

    test_session(model, prompt, n_prompt, NULL);
    /* Sampled with temperature and a bias: the logprobs stay the model's own. */
    sp.temperature = 1.5f;
    sp.seed = 7;
    bias.token = prompt[0];
    bias.bias = 3.0f;
    sp.logit_bias = &bias;
    sp.n_logit_bias = 1;
    test_session(model, prompt, n_prompt, &sp);
    test_batch(model, prompt, n_prompt);

    EXPECT_OK(vkf_session_create(model, NULL, &session));
    gp.max_new_tokens = 2;
    gp.n_logprobs = 3;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_generate(session, prompt, n_prompt, &gp, ids, 2, NULL));
    EXPECT_MESSAGE("params.n_logprobs is 3 with on_logprobs NULL");
    gp.on_logprobs = on_logprobs;
    gp.n_logprobs = 1u << 30;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_generate(session, prompt, n_prompt, &gp, ids, 2, NULL));
    EXPECT_MESSAGE("over the model's vocabulary size");

    EXPECT_OK(vkf_session_free(session));
    EXPECT_OK(vkf_tokenizer_free(tok));
    EXPECT_OK(vkf_model_free(model));
    EXPECT_OK(vkf_context_free(ctx));
    CHECK(validation_messages == 0);
    if (check_failures != 0) {
        fprintf(stderr, "test_capi_logprobs: %d checks failed\n", check_failures);
        return 1;
    }
    printf("test_capi_logprobs: all checks passed\n");
    return 0;
}
