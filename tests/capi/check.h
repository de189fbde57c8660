/* The C API tests' checks: each failure prints the call, the status and vkf_last_error(), and
 * the test exits 1 at the end (every check runs). C11. */
#ifndef VKF_TESTS_CAPI_CHECK_H
#define VKF_TESTS_CAPI_CHECK_H

#include "vkformer/vkformer.h"

#include <stdio.h>
#include <string.h>

static int check_failures = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            check_failures++;                                                        \
        }                                                                            \
    } while (0)

/* The call returns `expected`; a failure's message must name the function and be non-empty,
 * a success's must be empty. */
#define EXPECT_STATUS(expected, call)                                                                          \
    do {                                                                                                       \
        vkf_status got_ = (call);                                                                              \
        if (got_ != (expected)) {                                                                              \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s: %s\n", __FILE__, __LINE__, #call,             \
                    vkf_status_name(got_), vkf_status_name(expected), vkf_last_error());                       \
            check_failures++;                                                                                  \
        } else if ((expected) != VKF_OK && strncmp(vkf_last_error(), "vkf_", 4) != 0) {                        \
            fprintf(stderr, "%s:%d: %s: message '%s' does not name the function\n", __FILE__, __LINE__, #call, \
                    vkf_last_error());                                                                         \
            check_failures++;                                                                                  \
        } else if ((expected) == VKF_OK && vkf_last_error()[0] != '\0') {                                      \
            fprintf(stderr, "%s:%d: %s succeeded but left a message\n", __FILE__, __LINE__, #call);            \
            check_failures++;                                                                                  \
        }                                                                                                      \
    } while (0)

#define EXPECT_OK(call) EXPECT_STATUS(VKF_OK, call)

/* The message of the last failure contains `text`. */
#define EXPECT_MESSAGE(text)                                                                                   \
    do {                                                                                                       \
        if (strstr(vkf_last_error(), (text)) == NULL) {                                                        \
            fprintf(stderr, "%s:%d: message '%s' lacks '%s'\n", __FILE__, __LINE__, vkf_last_error(), (text)); \
            check_failures++;                                                                                  \
        }                                                                                                      \
    } while (0)

/* A context whose log counts every message above info (the validation layer's): a test ends
 * with CHECK(validation_messages == 0). `limits` as vkf_context_params.limits (NULL: none). */
static int validation_messages = 0;
static inline void count_validation(vkf_log_level level, const char* message, void* user_data) {
    (void)user_data;
    if (level != VKF_LOG_INFO) {
        fprintf(stderr, "vulkan: %s\n", message);
        validation_messages++;
    }
}

static inline vkf_context* make_context(const char* limits) {
    vkf_context* ctx = NULL;
    vkf_context_params p = vkf_context_default_params();
    p.limits = limits;
    p.log = count_validation;
    EXPECT_OK(vkf_context_create(&p, &ctx));
    return ctx;
}

#endif
