/* vkf_generate_params.grammar and json_schema (docs/API.md "Grammars"): greedy text from
 * models/kjv-bloom constrained to a GBNF grammar's sentences and to a JSON schema's object, and
 * the refusals (an unsupported keyword, both at once, no tokenizer), each naming the problem.
 * usage: test_capi_grammar MODEL_DIR */
#include "check.h"

#include <stdint.h>

int main(int argc, char** argv) {
    vkf_context* ctx = NULL;
    vkf_model* model = NULL;
    vkf_tokenizer* tok = NULL;
    vkf_session* session = NULL;
    vkf_generate_params gp = vkf_generate_default_params();
    vkf_generate_result result;
    uint32_t prompt[16], ids[16];
    size_t n_prompt = 0, length = 0;
    char text[64];
    if (argc != 2) {
        fprintf(stderr, "usage: test_capi_grammar MODEL_DIR\n");
        return 2;
    }
    memset(&result, 0, sizeof result);
    result.struct_size = sizeof result;
    ctx = make_context(NULL);
    EXPECT_OK(vkf_model_load(ctx, argv[1], NULL, &model));
    EXPECT_OK(vkf_tokenizer_load(argv[1], &tok));
    EXPECT_OK(vkf_tokenize(tok, "And God said", 12, 0, prompt, 16, &n_prompt));
    EXPECT_OK(vkf_session_create(model, NULL, &session));
    gp.max_new_tokens = 8;
    gp.tokenizer = tok;

    gp.grammar = "root ::= (\"yes\" | \"no\") \".\"";
    EXPECT_OK(vkf_generate(session, prompt, n_prompt, &gp, ids, 16, &result));
    CHECK(result.stop == VKF_STOP_EOS);
    EXPECT_OK(vkf_detokenize(tok, ids, result.n_tokens, 1, text, sizeof text, &length));
    CHECK((length == 4 && memcmp(text, "yes.", 4) == 0) || (length == 3 && memcmp(text, "no.", 3) == 0));

    gp.grammar = NULL;
    gp.json_schema = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}},\"required\":[\"n\"]}";
    EXPECT_OK(vkf_session_reset(session));
    EXPECT_OK(vkf_generate(session, prompt, n_prompt, &gp, ids, 16, &result));
    EXPECT_OK(vkf_detokenize(tok, ids, result.n_tokens, 1, text, sizeof text, &length));
    CHECK(length > 5 && text[0] == '{' && strstr(text, "\"n\"") != NULL);

    gp.json_schema = "{\"type\":\"string\",\"pattern\":\"a\"}";
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_generate(session, prompt, n_prompt, &gp, ids, 16, &result));
    EXPECT_MESSAGE("'pattern' is not supported");
    gp.grammar = "root ::= \"a\"";
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_generate(session, prompt, n_prompt, &gp, ids, 16, &result));
    EXPECT_MESSAGE("give one");
    gp.json_schema = NULL;
    gp.tokenizer = NULL;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_generate(session, prompt, n_prompt, &gp, ids, 16, &result));
    EXPECT_MESSAGE("params.tokenizer is NULL");

    EXPECT_OK(vkf_session_free(session));
    EXPECT_OK(vkf_tokenizer_free(tok));
    EXPECT_OK(vkf_model_free(model));
    EXPECT_OK(vkf_context_free(ctx));
    CHECK(validation_messages == 0);
    if (check_failures != 0) {
        fprintf(stderr, "test_capi_grammar: %d checks failed\n", check_failures);
        return 1;
    }
    printf("test_capi_grammar: all checks passed\n");
    return 0;
}
