/* The C API without a model: version, statuses, cancel flags, devices, contexts (bad params,
 * forced limits, logging), tokenizers, and misuse of every handle kind.
 * usage: test_capi_basic MODEL_DIR (models/kjv-bloom: its tokenizer.json) */
#include "check.h"

#include <stdint.h>
#include <stdlib.h>

static void test_version(void) {
    CHECK(vkf_abi_version() == VKF_ABI_VERSION);
    CHECK(vkf_version() == VKF_VERSION_MAJOR * 10000u + VKF_VERSION_MINOR * 100u + VKF_VERSION_PATCH);
    CHECK(strncmp(vkf_version_string(), "0.", 2) == 0);
    CHECK(strcmp(vkf_status_name(VKF_OK), "VKF_OK") == 0);
    for (int s = VKF_ERROR_INVALID_ARGUMENT; s <= VKF_ERROR_BUSY; s++) {
        CHECK(strncmp(vkf_status_name((vkf_status)s), "VKF_ERROR_", 10) == 0);
    }
    CHECK(strcmp(vkf_status_name(VKF_ERROR_BUSY), "VKF_ERROR_BUSY") == 0);
    CHECK(strcmp(vkf_status_name((vkf_status)999), "VKF_UNKNOWN_STATUS") == 0);
    CHECK(vkf_last_error() != NULL);
}

static void test_cancel(void) {
    vkf_cancel* cancel = NULL;
    int requested = -1;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_cancel_create(NULL));
    EXPECT_OK(vkf_cancel_create(&cancel));
    EXPECT_OK(vkf_cancel_is_requested(cancel, &requested));
    CHECK(requested == 0);
    EXPECT_OK(vkf_cancel_request(cancel));
    EXPECT_OK(vkf_cancel_is_requested(cancel, &requested));
    CHECK(requested == 1);
    EXPECT_OK(vkf_cancel_reset(cancel));
    EXPECT_OK(vkf_cancel_is_requested(cancel, &requested));
    CHECK(requested == 0);
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_cancel_is_requested(cancel, NULL));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_cancel_request(NULL));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_cancel_reset(NULL));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_cancel_is_requested(NULL, &requested));
    EXPECT_OK(vkf_cancel_free(cancel));
    /* A second free, and use after free, are refused (the registry no longer holds it). */
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_cancel_free(cancel));
    EXPECT_MESSAGE("not a live vkf_cancel");
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_cancel_request(cancel));
    EXPECT_OK(vkf_cancel_free(NULL));
}

static void test_devices(void) {
    uint32_t count = 0;
    vkf_device_info info;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_device_count(NULL));
    EXPECT_OK(vkf_device_count(&count));
    CHECK(count >= 1);
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    EXPECT_OK(vkf_device_get_info(0, &info));
    CHECK(info.name[0] != '\0');
    CHECK(info.max_workgroup_invocations >= 128);
    CHECK(info.max_storage_buffer_range > 0);
    CHECK(info.memory_available_bytes == 0);
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_device_get_info(count, &info));
    EXPECT_MESSAGE("out of range");
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_device_get_info(0, NULL));
    info.struct_size = 3; /* not set from sizeof */
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_device_get_info(0, &info));
    EXPECT_MESSAGE("struct_size");
}

static int log_calls = 0;
static void count_log(vkf_log_level level, const char* message, void* user_data) {
    (void)level;
    (void)message;
    *(int*)user_data += 1;
}

static void test_context(void) {
    vkf_context* ctx = NULL;
    vkf_context_params p = vkf_context_default_params();
    vkf_device_info info;
    CHECK(p.struct_size == sizeof p);
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_context_create(&p, NULL));
    p.struct_size = 8;
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_context_create(&p, &ctx));
    CHECK(ctx == NULL);
    p = vkf_context_default_params();
    p.limits = "no_such_limit=3";
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_context_create(&p, &ctx));
    EXPECT_MESSAGE("params.limits");
    p = vkf_context_default_params();
    p.device_name = "no device has this name";
    EXPECT_STATUS(VKF_ERROR_UNSUPPORTED, vkf_context_create(&p, &ctx));
    p = vkf_context_default_params();
    p.vk_device = &p; /* one Vulkan object of four */
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_context_create(&p, &ctx));
    EXPECT_MESSAGE("all or none");
    CHECK(ctx == NULL);

    /* Forced limits show in the context's device info. */
    p = vkf_context_default_params();
    p.limits = "shared_memory=16K,workgroup_invocations=128,device_heap=32M,host_heap=1";
    p.log = count_log;
    p.log_user_data = &log_calls;
    p.pipeline_cache_dir = "";
    EXPECT_OK(vkf_context_create(&p, &ctx));
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    EXPECT_OK(vkf_context_get_device_info(ctx, &info));
    CHECK(info.max_shared_memory == 16384);
    CHECK(info.max_workgroup_invocations == 128);
    CHECK(info.memory_available_bytes > 0 && info.memory_available_bytes <= (32u << 20) + 1);
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_context_get_device_info(ctx, NULL));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_context_get_device_info(NULL, &info));
    /* Another kind of handle passed as a context. */
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_session_reset((vkf_session*)ctx));
    EXPECT_MESSAGE("not a live vkf_session");
    EXPECT_OK(vkf_context_free(ctx));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_context_free(ctx));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_context_get_device_info(ctx, &info));
    EXPECT_OK(vkf_context_free(NULL));
    EXPECT_OK(vkf_context_create(NULL, &ctx)); /* NULL params: the defaults */
    EXPECT_OK(vkf_context_free(ctx));
}

static void test_tokenizer(const char* model_dir) {
    vkf_tokenizer* tok = NULL;
    uint32_t ids[64], vocab = 0, id = 0;
    size_t n = 0, length = 0;
    char text[256];
    const char* hello = "In the beginning God created the heaven and the earth. \xc3\xa9\xe2\x82\xac";
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_tokenizer_load(NULL, &tok));
    EXPECT_STATUS(VKF_ERROR_IO, vkf_tokenizer_load("/no/such/tokenizer.json", &tok));
    EXPECT_MESSAGE("does not exist");
    EXPECT_STATUS(VKF_ERROR_IO, vkf_tokenizer_load("/", &tok));
    EXPECT_MESSAGE("no tokenizer.json");
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_tokenizer_load(model_dir, NULL));
    CHECK(tok == NULL);
    EXPECT_OK(vkf_tokenizer_load(model_dir, &tok));
    EXPECT_OK(vkf_tokenizer_vocab_size(tok, &vocab));
    CHECK(vocab == 4096);
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_tokenizer_vocab_size(tok, NULL));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_tokenizer_vocab_size(NULL, &vocab));

    EXPECT_OK(vkf_tokenize(tok, hello, strlen(hello), 0, ids, 64, &n));
    CHECK(n > 5 && n < 64);
    EXPECT_OK(vkf_detokenize(tok, ids, n, 0, text, sizeof text, &length));
    CHECK(length == strlen(hello) && strcmp(text, hello) == 0);
    /* Sizes: asked with no buffer, then too small. */
    EXPECT_STATUS(VKF_ERROR_BUFFER_TOO_SMALL, vkf_tokenize(tok, hello, strlen(hello), 0, NULL, 0, &length));
    CHECK(length == n);
    EXPECT_STATUS(VKF_ERROR_BUFFER_TOO_SMALL, vkf_tokenize(tok, hello, strlen(hello), 0, ids, 2, &length));
    EXPECT_STATUS(VKF_ERROR_BUFFER_TOO_SMALL, vkf_detokenize(tok, ids, n, 0, text, strlen(hello), &length));
    CHECK(length == strlen(hello));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_tokenize(tok, NULL, 3, 0, ids, 64, &n));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_tokenize(tok, hello, 3, 0, ids, 64, NULL));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_tokenize(tok, hello, 3, 0, NULL, 64, &n));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_tokenize(NULL, hello, 3, 0, ids, 64, &n));
    /* Bad UTF-8: a lone continuation byte, a truncated sequence, an overlong encoding. */
    EXPECT_STATUS(VKF_ERROR_INVALID_UTF8, vkf_tokenize(tok, "ab\x80", 3, 0, ids, 64, &n));
    EXPECT_MESSAGE("byte 2");
    EXPECT_STATUS(VKF_ERROR_INVALID_UTF8, vkf_tokenize(tok, "ab\xe2\x82", 4, 0, ids, 64, &n));
    EXPECT_STATUS(VKF_ERROR_INVALID_UTF8, vkf_tokenize(tok, "\xc0\xaf", 2, 0, ids, 64, &n));
    EXPECT_OK(vkf_tokenize(tok, "", 0, 0, ids, 64, &n));
    CHECK(n == 0);
    /* An id outside the vocabulary. */
    ids[0] = vocab + 7;
    EXPECT_STATUS(VKF_ERROR_MODEL, vkf_detokenize(tok, ids, 1, 0, text, sizeof text, &length));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_detokenize(tok, NULL, 1, 0, text, sizeof text, &length));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_detokenize(tok, ids, 0, 0, text, sizeof text, NULL));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_detokenize(NULL, ids, 0, 0, text, sizeof text, &length));

    EXPECT_STATUS(VKF_ERROR_MODEL, vkf_tokenizer_token_id(tok, "no such token, surely", &id));
    EXPECT_STATUS(VKF_ERROR_INVALID_UTF8, vkf_tokenizer_token_id(tok, "\xff", &id));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_tokenizer_token_id(tok, NULL, &id));
    EXPECT_STATUS(VKF_ERROR_INVALID_ARGUMENT, vkf_tokenizer_token_id(tok, "a", NULL));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_tokenizer_token_id(NULL, "a", &id));
    /* Vocabulary strings as stored: byte-level BPE's "\xc4\xa0" (U+0120) stands for a space. */
    EXPECT_OK(vkf_tokenize(tok, " God", 4, 0, ids, 64, &n));
    CHECK(n == 1);
    EXPECT_OK(vkf_tokenizer_token_id(tok, "\xc4\xa0God", &id));
    CHECK(id == ids[0]);
    EXPECT_OK(vkf_tokenizer_token_id(tok, "</s>", &id));
    CHECK(id == 2);

    EXPECT_OK(vkf_tokenizer_free(tok));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_tokenizer_free(tok));
    EXPECT_OK(vkf_tokenizer_free(NULL));
    /* Freeing any handle kind twice, or as another kind, is refused. */
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_model_free((vkf_model*)&id));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_session_free((vkf_session*)&id));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_batch_free((vkf_batch*)&id));
    EXPECT_STATUS(VKF_ERROR_INVALID_HANDLE, vkf_encoder_free((vkf_encoder*)&id));
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_capi_basic MODEL_DIR\n");
        return 2;
    }
    test_version();
    test_cancel();
    test_devices();
    test_context();
    test_tokenizer(argv[1]);
    if (check_failures != 0) {
        fprintf(stderr, "test_capi_basic: %d checks failed\n", check_failures);
        return 1;
    }
    printf("test_capi_basic: all checks passed\n");
    return 0;
}
