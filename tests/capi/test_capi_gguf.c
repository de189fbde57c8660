/* The C API with a llama.cpp GGUF file (docs/FORMATS.md, GGUF files): loaded by path, and from
 * an open descriptor with an offset and a length as an Android asset gives it (the file WRAPPED
 * holds the GGUF file at OFFSET, with other bytes before and after it); both must generate the
 * same greedy ids, which are printed ("ids: a,b,...") for gguf_run_test.py to compare with
 * vkf-run's. The tokenizer is loaded from the GGUF file too. Bad descriptors and windows are
 * refused with VKF_ERROR_IO, a window that is no GGUF file with VKF_ERROR_MODEL.
 * usage: test_capi_gguf FILE.gguf WRAPPED OFFSET LENGTH */
#define _POSIX_C_SOURCE 200809L /* open, close */

#include "check.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

enum { kPredict = 8 };
static const uint32_t kPrompt[] = {1, 410, 82, 37, 5, 300}; /* gguf_run_test.py's PROMPT */

static void generate(vkf_model* model, uint32_t* out) {
    vkf_session* session = NULL;
    vkf_session_params sp = vkf_session_default_params();
    vkf_generate_params gp = vkf_generate_default_params();
    vkf_generate_result result;
    memset(&result, 0, sizeof result);
    result.struct_size = sizeof result;
    sp.max_tokens = 32;
    gp.max_new_tokens = kPredict;
    gp.use_model_eos = 0;
    EXPECT_OK(vkf_session_create(model, &sp, &session));
    EXPECT_OK(vkf_generate(session, kPrompt, sizeof kPrompt / sizeof *kPrompt, &gp, out, kPredict, &result));
    CHECK(result.n_tokens == kPredict);
    EXPECT_OK(vkf_session_free(session));
}

int main(int argc, char** argv) {
    vkf_context* ctx = NULL;
    vkf_model_params mp = vkf_model_default_params();
    vkf_model* by_path = NULL;
    vkf_model* by_fd = NULL;
    vkf_model* refused = NULL;
    vkf_tokenizer* tok = NULL;
    uint32_t a[kPredict], b[kPredict], size = 0;
    uint64_t offset, length;
    int fd, i;
    if (argc != 5) {
        fprintf(stderr, "usage: test_capi_gguf FILE.gguf WRAPPED OFFSET LENGTH\n");
        return 2;
    }
    offset = strtoull(argv[3], NULL, 10);
    length = strtoull(argv[4], NULL, 10);
    ctx = make_context(NULL);
    mp.weights = VKF_WEIGHTS_F32;

    EXPECT_OK(vkf_model_load(ctx, argv[1], &mp, &by_path));
    EXPECT_OK(vkf_tokenizer_load(argv[1], &tok));
    EXPECT_OK(vkf_tokenizer_vocab_size(tok, &size));
    CHECK(size > 0);

    fd = open(argv[2], O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    EXPECT_OK(vkf_model_load_fd(ctx, fd, offset, length, &mp, &by_fd));
    EXPECT_STATUS(VKF_ERROR_MODEL, vkf_model_load_fd(ctx, fd, 0, length, &mp, &refused));
    EXPECT_MESSAGE("not a GGUF file");
    EXPECT_STATUS(VKF_ERROR_IO, vkf_model_load_fd(ctx, fd, offset, (uint64_t)1 << 40, &mp, &refused));
    EXPECT_MESSAGE("the file has only");
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_model_load_fd(ctx, -1, offset, length, &mp, &refused));
    close(fd); /* the model keeps its own descriptor */
    EXPECT_STATUS(VKF_ERROR_IO, vkf_model_load_fd(ctx, fd, offset, length, &mp, &refused));
    EXPECT_MESSAGE("not an open file descriptor");
    CHECK(refused == NULL);

    if (by_path != NULL && by_fd != NULL) {
        generate(by_path, a);
        generate(by_fd, b);
        CHECK(memcmp(a, b, sizeof a) == 0);
        printf("ids: ");
        for (i = 0; i < kPredict; i++) {
            printf(i == 0 ? "%u" : ",%u", (unsigned)a[i]);
        }
        printf("\n");
    }
    EXPECT_OK(vkf_model_free(by_fd));
    EXPECT_OK(vkf_model_free(by_path));
    EXPECT_OK(vkf_tokenizer_free(tok));
    EXPECT_OK(vkf_context_free(ctx));
    CHECK(validation_messages == 0);
    if (check_failures != 0) {
        fprintf(stderr, "test_capi_gguf: %d checks failed\n", check_failures);
        return 1;
    }
    printf("test_capi_gguf: all checks passed\n");
    return 0;
}
