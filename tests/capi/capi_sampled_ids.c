/* The ids vkf_generate samples for prompt ids with every sampler field set: run by
 * sampler_chain_test.py, which gives it the fields vkf-run takes as options and compares the
 * ids with vkf-run's (one library sampler behind both, docs/API.md "The sampler chain").
 * usage: capi_sampled_ids MODEL_DIR N_NEW FIELD=VALUE... -- PROMPT_ID...
 * FIELD: temperature top_k top_p min_p typical_p repetition_penalty presence_penalty
 * frequency_penalty penalty_last_n seed, and bias=ID:VALUE (repeatable). Prints the ids on one
 * line, space-separated. */
#include "check.h"

#include <stdint.h>
#include <stdlib.h>

enum { kMaxIds = 256, kMaxBias = 16 };

/* One FIELD=VALUE into `sp`; 0 when the field is not one of them. */
static int set_field(vkf_sampling_params* sp, vkf_logit_bias* bias, const char* arg) {
    const char* eq = strchr(arg, '=');
    const size_t name = eq != NULL ? (size_t)(eq - arg) : 0;
    const char* value = eq != NULL ? eq + 1 : "";
#define FIELD(text) (name == strlen(text) && strncmp(arg, text, name) == 0)
    if (FIELD("temperature")) {
        sp->temperature = strtof(value, NULL);
    } else if (FIELD("top_k")) {
        sp->top_k = (uint32_t)strtoul(value, NULL, 10);
    } else if (FIELD("top_p")) {
        sp->top_p = strtof(value, NULL);
    } else if (FIELD("min_p")) {
        sp->min_p = strtof(value, NULL);
    } else if (FIELD("typical_p")) {
        sp->typical_p = strtof(value, NULL);
    } else if (FIELD("repetition_penalty")) {
        sp->repetition_penalty = strtof(value, NULL);
    } else if (FIELD("presence_penalty")) {
        sp->presence_penalty = strtof(value, NULL);
    } else if (FIELD("frequency_penalty")) {
        sp->frequency_penalty = strtof(value, NULL);
    } else if (FIELD("penalty_last_n")) {
        sp->penalty_last_n = (uint32_t)strtoul(value, NULL, 10);
    } else if (FIELD("seed")) {
        sp->seed = strtoull(value, NULL, 10);
    } else if (FIELD("bias") && sp->n_logit_bias < kMaxBias) {
        char* colon = NULL;
        bias[sp->n_logit_bias].token = (uint32_t)strtoul(value, &colon, 10);
        if (*colon != ':') {
            return 0;
        }
        bias[sp->n_logit_bias].bias = strtof(colon + 1, NULL);
        sp->n_logit_bias++;
    } else {
        return 0;
    }
#undef FIELD
    return 1;
}

int main(int argc, char** argv) {
    vkf_context* ctx = NULL;
    vkf_model* model = NULL;
    vkf_session* session = NULL;
    vkf_generate_params gp = vkf_generate_default_params();
    vkf_sampling_params sp = vkf_sampling_default_params();
    vkf_logit_bias bias[kMaxBias];
    vkf_generate_result result;
    uint32_t prompt[kMaxIds], ids[kMaxIds];
    size_t n_prompt = 0;
    int i = 3;
    const unsigned long n_new = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
    if (argc < 5 || n_new == 0 || n_new > kMaxIds) {
        fprintf(stderr, "usage: capi_sampled_ids MODEL_DIR N_NEW FIELD=VALUE... -- PROMPT_ID...\n");
        return 2;
    }
    sp.logit_bias = bias;
    for (; i < argc && strcmp(argv[i], "--") != 0; ++i) {
        if (!set_field(&sp, bias, argv[i])) {
            fprintf(stderr, "capi_sampled_ids: unknown field %s\n", argv[i]);
            return 2;
        }
    }
    for (++i; i < argc && n_prompt < kMaxIds; ++i) {
        prompt[n_prompt++] = (uint32_t)strtoul(argv[i], NULL, 10);
    }
    if (sp.n_logit_bias == 0) {
        sp.logit_bias = NULL;
    }
    ctx = make_context(NULL);
    EXPECT_OK(vkf_model_load(ctx, argv[1], NULL, &model));
    EXPECT_OK(vkf_session_create(model, NULL, &session));
    memset(&result, 0, sizeof result);
    result.struct_size = sizeof result;
    gp.max_new_tokens = (uint32_t)n_new;
    gp.sampling = &sp;
    EXPECT_OK(vkf_generate(session, prompt, n_prompt, &gp, ids, kMaxIds, &result));
    for (uint32_t k = 0; k < result.n_tokens; ++k) {
        printf(k == 0 ? "%u" : " %u", (unsigned)ids[k]);
    }
    printf("\n");
    EXPECT_OK(vkf_session_free(session));
    EXPECT_OK(vkf_model_free(model));
    EXPECT_OK(vkf_context_free(ctx));
    CHECK(validation_messages == 0);
    return check_failures != 0;
}
