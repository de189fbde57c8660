/* Sequence state (vkformer_state.h): a session saved mid-generation and loaded into a fresh
 * process continues with the greedy ids of the uninterrupted run, with fp16, q8_0, q4_0 and
 * fp32 KV caches; every refusal (another model, another KV format, truncated, a corrupted byte, a newer
 * version, too big for the session) leaves the session working as it was.
 * usage: test_capi_state MODEL_DIR OTHER_MODEL_DIR WORK_DIR
 *        test_capi_state continue MODEL_DIR STATE_FILE KV LAST_TOKEN (the fresh process; KV is a
 *        vkf_kv_format, or 99 for fp32; prints
 *        the ids that follow, one line) */
#define _POSIX_C_SOURCE 200809L
#include "check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { kFirst = 10, kTotal = 24, kMaxTokens = 64 };
static const uint32_t kPrompt[] = {17, 250, 3001, 42, 977, 1200, 5, 64, 2048, 333, 91, 1500, 7, 808, 19};
static const size_t kPromptLen = sizeof kPrompt / sizeof kPrompt[0];

static vkf_model* load(vkf_context* ctx, const char* dir) {
    vkf_model* model = NULL;
    EXPECT_OK(vkf_model_load(ctx, dir, NULL, &model));
    return model;
}

enum { kKvF32 = 99 }; /* not a vkf_kv_format: a dense fp32 cache (kv_f32) */

static vkf_session* session_of(vkf_model* model, uint32_t kv, uint32_t max_tokens) {
    vkf_session* session = NULL;
    vkf_session_params p = vkf_session_default_params();
    p.max_tokens = max_tokens;
    p.kv_f32 = kv == kKvF32;
    p.kv_k = kv == kKvF32 ? VKF_KV_DENSE : kv;
    p.kv_v = p.kv_k;
    EXPECT_OK(vkf_session_create(model, &p, &session));
    return session;
}

/* Greedy, no stop id: exactly n tokens. */
static void greedy(vkf_session* session, const uint32_t* prompt, size_t n_prompt, uint32_t n, uint32_t* ids) {
    vkf_generate_params gp = vkf_generate_default_params();
    gp.max_new_tokens = n;
    gp.use_model_eos = 0;
    EXPECT_OK(vkf_generate(session, prompt, n_prompt, &gp, ids, n, NULL));
}

static int same(const uint32_t* a, const uint32_t* b, size_t n) {
    return memcmp(a, b, n * sizeof *a) == 0;
}

/* The fresh process: loads the state file and generates what follows LAST_TOKEN. */
static int continue_from_file(const char* dir, const char* file, uint32_t kv, uint32_t last) {
    vkf_context* ctx = make_context(NULL);
    vkf_model* model = load(ctx, dir);
    vkf_session* session = session_of(model, kv, kMaxTokens);
    uint32_t position = 0;
    uint32_t ids[kTotal - kFirst];
    EXPECT_OK(vkf_session_load_state_file(session, file));
    EXPECT_OK(vkf_session_position(session, &position));
    CHECK(position == kPromptLen + kFirst - 1);
    greedy(session, &last, 1, kTotal - kFirst, ids);
    for (size_t i = 0; i < kTotal - kFirst; i++) {
        printf("%u ", ids[i]);
    }
    printf("\n");
    vkf_session_free(session);
    vkf_model_free(model);
    vkf_context_free(ctx);
    CHECK(validation_messages == 0);
    return check_failures == 0 ? 0 : 1;
}

/* Runs the fresh process and reads the ids it printed. */
static void run_fresh(const char* self, const char* dir, const char* file, uint32_t kv, uint32_t last, uint32_t* ids) {
    /* A cross-build runs its programs under an emulator (tests/CMakeLists.txt). */
    const char* emulator = getenv("VKF_TEST_EMULATOR");
    char command[16384];
    const int length = snprintf(command, sizeof command, "%s '%s' continue '%s' '%s' %u %u",
                                emulator != NULL ? emulator : "", self, dir, file, kv, last);
    CHECK(length > 0 && (size_t)length < sizeof command);
    FILE* child = popen(command, "r");
    CHECK(child != NULL);
    if (child == NULL) {
        return;
    }
    for (size_t i = 0; i < kTotal - kFirst; i++) {
        unsigned id = 0;
        CHECK(fscanf(child, "%u", &id) == 1);
        ids[i] = id;
    }
    CHECK(pclose(child) == 0);
}

/* Refused with VKF_ERROR_MODEL naming `text`. */
static void expect_refused(vkf_session* session, const uint8_t* bytes, size_t size, const char* text) {
    EXPECT_STATUS(VKF_ERROR_MODEL, vkf_session_load_state(session, bytes, size));
    EXPECT_MESSAGE(text);
}

static void write_bytes(const char* path, const uint8_t* bytes, size_t size) {
    FILE* f = fopen(path, "wb");
    CHECK(f != NULL && fwrite(bytes, 1, size, f) == size && fclose(f) == 0);
}

/* Saves mid-generation with `kv`, continues in a fresh process and in this one, against the
 * uninterrupted run; with the fp16 cache, every refusal on the saved session. */
static void test_format(const char* self, vkf_context* ctx, vkf_model* model, vkf_model* other, const char* dir,
                        const char* work, uint32_t kv) {
    uint32_t whole[kTotal], first[kFirst], rest[kTotal - kFirst];
    char file[2048];
    size_t size = 0, written = 0;
    uint32_t position = 0;
    snprintf(file, sizeof file, "%s/state_%u.bin", work, kv);

    vkf_session* uninterrupted = session_of(model, kv, kMaxTokens);
    greedy(uninterrupted, kPrompt, kPromptLen, kTotal, whole);
    vkf_session_free(uninterrupted);

    vkf_session* saver = session_of(model, kv, kMaxTokens);
    EXPECT_STATUS(VKF_ERROR_MODEL, vkf_session_state_size(saver, &size)); /* nothing to save yet */
    EXPECT_MESSAGE("no tokens");
    greedy(saver, kPrompt, kPromptLen, kFirst, first);
    CHECK(same(first, whole, kFirst));
    EXPECT_OK(vkf_session_state_size(saver, &size));
    EXPECT_STATUS(VKF_ERROR_BUFFER_TOO_SMALL, vkf_session_save_state(saver, NULL, 0, &written));
    CHECK(written == size);
    uint8_t* bytes = malloc(size);
    EXPECT_OK(vkf_session_save_state(saver, bytes, size, &written));
    CHECK(written == size);
    EXPECT_OK(vkf_session_save_state_file(saver, file));

    /* A fresh process continues as the uninterrupted run did. */
    memset(rest, 0xff, sizeof rest);
    run_fresh(self, dir, file, kv, first[kFirst - 1], rest);
    CHECK(same(rest, whole + kFirst, kTotal - kFirst));

    /* A fresh session here, from memory. */
    vkf_session* loader = session_of(model, kv, kMaxTokens);
    EXPECT_OK(vkf_session_load_state(loader, bytes, size));
    EXPECT_OK(vkf_session_position(loader, &position));
    CHECK(position == kPromptLen + kFirst - 1);
    memset(rest, 0xff, sizeof rest);
    greedy(loader, &first[kFirst - 1], 1, kTotal - kFirst, rest);
    CHECK(same(rest, whole + kFirst, kTotal - kFirst));
    vkf_session_free(loader);

    if (kv == VKF_KV_DENSE) {
        /* Every refusal on the session that saved; it must go on as if none had been tried. */
        uint8_t* copy = malloc(size);
        vkf_session* on_other = session_of(other, VKF_KV_DENSE, kMaxTokens);
        expect_refused(on_other, bytes, size, "another model");
        EXPECT_MESSAGE("hidden: the state has 256");
        vkf_session_free(on_other);
        vkf_session* quantized = session_of(model, VKF_KV_Q8_0, kMaxTokens);
        expect_refused(quantized, bytes, size, "K quantization: the state has none, this session q8_0");
        vkf_session_free(quantized);

        expect_refused(saver, bytes, size - 1, "truncated");
        expect_refused(saver, bytes, 40, "truncated");
        memcpy(copy, bytes, size);
        copy[size / 2] ^= 0x10; /* a KV byte */
        expect_refused(saver, copy, size, "CRC-32");
        memcpy(copy, bytes, size);
        copy[8] = 2; /* the format version */
        expect_refused(saver, copy, size, "newer");
        memcpy(copy, bytes, size);
        copy[0] = 'X';
        expect_refused(saver, copy, size, "not a vkformer sequence state");
        EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_session_load_state(saver, NULL, 4));
        vkf_session* small = session_of(model, VKF_KV_DENSE, 16);
        expect_refused(small, bytes, size, "over this session's KV cache of 16");
        vkf_session_free(small);

        /* The same through files: truncated on disk, and a missing file. */
        char broken[2048];
        snprintf(broken, sizeof broken, "%s/truncated.bin", work);
        write_bytes(broken, bytes, size - 100);
        EXPECT_STATUS(VKF_ERROR_MODEL, vkf_session_load_state_file(saver, broken));
        EXPECT_MESSAGE("truncated");
        snprintf(broken, sizeof broken, "%s/missing.bin", work);
        EXPECT_STATUS(VKF_ERROR_IO, vkf_session_load_state_file(saver, broken));

        EXPECT_OK(vkf_session_position(saver, &position));
        CHECK(position == kPromptLen + kFirst - 1);
        memset(rest, 0xff, sizeof rest);
        greedy(saver, &first[kFirst - 1], 1, kTotal - kFirst, rest);
        CHECK(same(rest, whole + kFirst, kTotal - kFirst));
        free(copy);
    }
    vkf_session_free(saver);
    free(bytes);
    (void)ctx;
}

int main(int argc, char** argv) {
    if (argc == 6 && strcmp(argv[1], "continue") == 0) {
        return continue_from_file(argv[2], argv[3], (uint32_t)strtoul(argv[4], NULL, 10),
                                  (uint32_t)strtoul(argv[5], NULL, 10));
    }
    if (argc != 4) {
        fprintf(stderr, "usage: test_capi_state MODEL_DIR OTHER_MODEL_DIR WORK_DIR\n");
        return 2;
    }
    vkf_context* ctx = make_context(NULL);
    vkf_model* model = load(ctx, argv[1]);
    vkf_model* other = load(ctx, argv[2]);
    test_format(argv[0], ctx, model, other, argv[1], argv[3], VKF_KV_DENSE);
    test_format(argv[0], ctx, model, other, argv[1], argv[3], VKF_KV_Q8_0);
    test_format(argv[0], ctx, model, other, argv[1], argv[3], VKF_KV_Q4_0);
    test_format(argv[0], ctx, model, other, argv[1], argv[3], kKvF32);
    vkf_model_free(other);
    vkf_model_free(model);
    vkf_context_free(ctx);
    CHECK(validation_messages == 0);
    if (check_failures != 0) {
        fprintf(stderr, "%d checks failed\n", check_failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
