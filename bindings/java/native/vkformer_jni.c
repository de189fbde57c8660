/* The JNI glue: library load, errors, strings, version, cancel flags and contexts. Models,
 * tokenizers and encoders: vkformer_jni_model.c; sessions and generation: vkformer_jni_generate.c. */
#define _POSIX_C_SOURCE 200809L /* strdup, strnlen */
#include "vkformer_jni.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

JavaVM* vkfj_vm;
jmethodID vkfj_sink_accept;
static jclass exception_class;
static jmethodID exception_init;

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void* reserved) {
    (void)reserved;
    JNIEnv* env = NULL;
    if ((*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_1_6) != JNI_OK) {
        return JNI_ERR;
    }
    vkfj_vm = vm;
    jclass local = (*env)->FindClass(env, "org/vkformer/VkformerException");
    if (local == NULL) {
        return JNI_ERR;
    }
    exception_class = (jclass)(*env)->NewGlobalRef(env, local);
    (*env)->DeleteLocalRef(env, local);
    exception_init = (*env)->GetMethodID(env, exception_class, "<init>", "(I[B[B)V");
    jclass sink = (*env)->FindClass(env, "org/vkformer/TokenSink");
    if (exception_class == NULL || exception_init == NULL || sink == NULL) {
        return JNI_ERR;
    }
    vkfj_sink_accept = (*env)->GetMethodID(env, sink, "accept", "(I[B)Z");
    (*env)->DeleteLocalRef(env, sink);
    return vkfj_sink_accept != NULL && vkfj_generate_load(env) ? JNI_VERSION_1_6 : JNI_ERR;
}

JNIEXPORT void JNICALL JNI_OnUnload(JavaVM* vm, void* reserved) {
    (void)reserved;
    JNIEnv* env = NULL;
    if ((*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_1_6) == JNI_OK && exception_class != NULL) {
        (*env)->DeleteGlobalRef(env, exception_class);
        exception_class = NULL;
        vkfj_generate_unload(env);
    }
}

jbyteArray vkfj_bytes(JNIEnv* env, const char* data, size_t length) {
    if (length > INT32_MAX) {
        vkfj_throw(env, VKF_ERROR_OUT_OF_MEMORY, "a string over 2 GiB does not fit a Java array");
        return NULL;
    }
    jbyteArray a = (*env)->NewByteArray(env, (jsize)length);
    if (a != NULL && length > 0) {
        (*env)->SetByteArrayRegion(env, a, 0, (jsize)length, (const jbyte*)data);
    }
    return a; /* NULL: OutOfMemoryError pending */
}

void vkfj_throw(JNIEnv* env, vkf_status status, const char* message) {
    const char* name = vkf_status_name(status);
    jbyteArray n = vkfj_bytes(env, name, strlen(name));
    jbyteArray m = n != NULL ? vkfj_bytes(env, message, strlen(message)) : NULL;
    if (m == NULL) {
        return; /* OutOfMemoryError pending */
    }
    jthrowable e = (jthrowable)(*env)->NewObject(env, exception_class, exception_init, (jint)status, n, m);
    if (e != NULL) {
        (*env)->Throw(env, e);
        (*env)->DeleteLocalRef(env, e);
    }
    (*env)->DeleteLocalRef(env, n);
    (*env)->DeleteLocalRef(env, m);
}

void vkfj_throw_status(JNIEnv* env, vkf_status status) {
    /* Copied first: the next vkformer call on this thread replaces it. */
    const char* last = vkf_last_error();
    char* message = strdup(last[0] != '\0' ? last : "(no message)");
    if (message == NULL) {
        vkfj_throw(env, status, "(out of memory for the message)");
        return;
    }
    vkfj_throw(env, status, message);
    free(message);
}

char* vkfj_cstring(JNIEnv* env, jbyteArray bytes, int* ok) {
    *ok = 1;
    if (bytes == NULL) {
        return NULL;
    }
    jsize n = (*env)->GetArrayLength(env, bytes);
    char* s = malloc((size_t)n + 1);
    if (s == NULL) {
        *ok = 0;
        vkfj_throw(env, VKF_ERROR_OUT_OF_MEMORY, "out of host memory for a string");
        return NULL;
    }
    (*env)->GetByteArrayRegion(env, bytes, 0, n, (jbyte*)s);
    s[n] = '\0';
    if (memchr(s, '\0', (size_t)n) != NULL) {
        free(s);
        *ok = 0;
        vkfj_throw(env, VKF_ERROR_INVALID_ARGUMENT, "a path or name holding a NUL character");
        return NULL;
    }
    return s;
}

uint32_t* vkfj_ids(JNIEnv* env, jintArray ids, size_t* n, int* ok) {
    *ok = 1;
    *n = 0;
    if (ids == NULL) {
        return NULL;
    }
    jsize len = (*env)->GetArrayLength(env, ids);
    if (len == 0) {
        return NULL;
    }
    uint32_t* out = malloc((size_t)len * sizeof(uint32_t));
    if (out == NULL) {
        *ok = 0;
        vkfj_throw(env, VKF_ERROR_OUT_OF_MEMORY, "out of host memory for token ids");
        return NULL;
    }
    (*env)->GetIntArrayRegion(env, ids, 0, len, (jint*)out);
    *n = (size_t)len;
    return out;
}

int vkfj_non_negative(JNIEnv* env, jint value, const char* what) {
    if (value >= 0) {
        return 1;
    }
    char message[160];
    snprintf(message, sizeof message, "%s of %d: must not be negative", what, (int)value);
    vkfj_throw(env, VKF_ERROR_INVALID_ARGUMENT, message);
    return 0;
}

/* ---- Version and cancel flags ---- */

JNIEXPORT jbyteArray JNICALL Java_org_vkformer_Native_versionString(JNIEnv* env, jclass c) {
    (void)c;
    const char* v = vkf_version_string();
    return vkfj_bytes(env, v, strlen(v));
}

JNIEXPORT jint JNICALL Java_org_vkformer_Native_abiVersion(JNIEnv* env, jclass c) {
    (void)env, (void)c;
    return (jint)vkf_abi_version();
}

JNIEXPORT jlong JNICALL Java_org_vkformer_Native_cancelCreate(JNIEnv* env, jclass c) {
    (void)c;
    vkf_cancel* out = NULL;
    vkf_status s = vkf_cancel_create(&out);
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
    }
    return VKFJ_HANDLE(out);
}

JNIEXPORT void JNICALL Java_org_vkformer_Native_cancelRequest(JNIEnv* env, jclass c, jlong h) {
    (void)c;
    vkf_status s = vkf_cancel_request(VKFJ_PTR(vkf_cancel, h));
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
    }
}

JNIEXPORT void JNICALL Java_org_vkformer_Native_cancelReset(JNIEnv* env, jclass c, jlong h) {
    (void)c;
    vkf_status s = vkf_cancel_reset(VKFJ_PTR(vkf_cancel, h));
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
    }
}

JNIEXPORT void JNICALL Java_org_vkformer_Native_cancelFree(JNIEnv* env, jclass c, jlong h) {
    (void)c;
    vkf_status s = vkf_cancel_free(VKFJ_PTR(vkf_cancel, h));
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
    }
}

/* ---- Contexts ---- */

JNIEXPORT jlong JNICALL Java_org_vkformer_Native_contextCreate(JNIEnv* env, jclass c, jint device_index,
                                                               jbyteArray device_name, jint validation,
                                                               jbyteArray limits, jbyteArray cache_dir) {
    (void)c;
    int ok1, ok2, ok3;
    char* name = vkfj_cstring(env, device_name, &ok1);
    char* lim = ok1 ? vkfj_cstring(env, limits, &ok2) : NULL;
    char* cache = ok1 && ok2 ? vkfj_cstring(env, cache_dir, &ok3) : NULL;
    vkf_context* out = NULL;
    if (ok1 && ok2 && ok3) {
        vkf_context_params p = vkf_context_default_params();
        p.device_index = device_index;
        p.device_name = name;
        p.validation = validation;
        p.limits = lim;
        p.pipeline_cache_dir = cache;
        vkf_status s = vkf_context_create(&p, &out);
        if (s != VKF_OK) {
            vkfj_throw_status(env, s);
        }
    }
    free(name);
    free(lim);
    free(cache);
    return VKFJ_HANDLE(out);
}

JNIEXPORT void JNICALL Java_org_vkformer_Native_contextFree(JNIEnv* env, jclass c, jlong h) {
    (void)c;
    vkf_status s = vkf_context_free(VKFJ_PTR(vkf_context, h));
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
    }
}

static int device_info(JNIEnv* env, jlong h, vkf_device_info* info) {
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    vkf_status s = vkf_context_get_device_info(VKFJ_PTR(vkf_context, h), info);
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
        return 0;
    }
    return 1;
}

JNIEXPORT jbyteArray JNICALL Java_org_vkformer_Native_contextDeviceName(JNIEnv* env, jclass c, jlong h) {
    (void)c;
    vkf_device_info info;
    return device_info(env, h, &info) ? vkfj_bytes(env, info.name, strnlen(info.name, sizeof info.name)) : NULL;
}

JNIEXPORT jlong JNICALL Java_org_vkformer_Native_contextMemoryAvailable(JNIEnv* env, jclass c, jlong h) {
    (void)c;
    vkf_device_info info;
    return device_info(env, h, &info) ? (jlong)info.memory_available_bytes : 0;
}
