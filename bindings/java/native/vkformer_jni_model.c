/* The JNI glue: models, tokenizers and encoders (helpers and errors: vkformer_jni.c). */
#include "vkformer_jni.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static vkf_model_params model_params(jint weights, jint max_tokens) {
    vkf_model_params p = vkf_model_default_params();
    p.weights = (uint32_t)weights;
    p.max_tokens = (uint32_t)max_tokens;
    return p;
}

JNIEXPORT jlongArray JNICALL Java_org_vkformer_Native_modelEstimate(JNIEnv* env, jclass c, jlong ctx, jbyteArray dir,
                                                                    jint weights, jint max_tokens) {
    (void)c;
    int ok;
    if (!vkfj_non_negative(env, weights, "weights") || !vkfj_non_negative(env, max_tokens, "maxTokens")) {
        return NULL;
    }
    char* path = vkfj_cstring(env, dir, &ok);
    if (!ok) {
        return NULL;
    }
    vkf_model_params p = model_params(weights, max_tokens);
    vkf_memory_estimate e;
    memset(&e, 0, sizeof e);
    e.struct_size = sizeof e;
    vkf_status s = vkf_model_estimate_memory(VKFJ_PTR(vkf_context, ctx), path, &p, &e);
    free(path);
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
        return NULL;
    }
    const jlong v[6] = {(jlong)e.weights, (jlong)e.kv_cache,  (jlong)e.activations,
                        (jlong)e.total,   (jlong)e.available, e.fits ? 1 : 0};
    jlongArray out = (*env)->NewLongArray(env, 6);
    if (out != NULL) {
        (*env)->SetLongArrayRegion(env, out, 0, 6, v);
    }
    return out;
}

JNIEXPORT jlong JNICALL Java_org_vkformer_Native_modelLoad(JNIEnv* env, jclass c, jlong ctx, jbyteArray dir,
                                                           jint weights, jint max_tokens, jlong cancel) {
    (void)c;
    int ok;
    if (!vkfj_non_negative(env, weights, "weights") || !vkfj_non_negative(env, max_tokens, "maxTokens")) {
        return 0;
    }
    char* path = vkfj_cstring(env, dir, &ok);
    if (!ok) {
        return 0;
    }
    vkf_model_params p = model_params(weights, max_tokens);
    p.cancel = VKFJ_PTR(vkf_cancel, cancel);
    vkf_model* out = NULL;
    vkf_status s = vkf_model_load(VKFJ_PTR(vkf_context, ctx), path, &p, &out);
    free(path);
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
        return 0;
    }
    return VKFJ_HANDLE(out);
}

/* The POSIX descriptor a java.io.FileDescriptor holds: OpenJDK names the field "fd", Android's
 * libcore "descriptor" (-1 once closed, in both). 0 with an exception thrown when it has neither
 * or is not open. */
static int descriptor_of(JNIEnv* env, jobject fd_object, jint* fd) {
    if (fd_object == NULL) {
        vkfj_throw(env, VKF_ERROR_INVALID_ARGUMENT, "fd is null");
        return 0;
    }
    jclass type = (*env)->GetObjectClass(env, fd_object);
    jfieldID field = (*env)->GetFieldID(env, type, "fd", "I");
    if (field == NULL) {
        (*env)->ExceptionClear(env); /* NoSuchFieldError: not OpenJDK's */
        field = (*env)->GetFieldID(env, type, "descriptor", "I");
    }
    (*env)->DeleteLocalRef(env, type);
    if (field == NULL) {
        (*env)->ExceptionClear(env);
        vkfj_throw(env, VKF_ERROR_INTERNAL,
                   "this JVM's java.io.FileDescriptor has neither an \"fd\" nor a "
                   "\"descriptor\" int field: pass the path instead");
        return 0;
    }
    *fd = (*env)->GetIntField(env, fd_object, field);
    if (*fd < 0) {
        char message[160];
        snprintf(message, sizeof message, "the FileDescriptor is not open (closed, or never opened): descriptor %d",
                 (int)*fd);
        vkfj_throw(env, VKF_ERROR_IO, message);
        return 0;
    }
    return 1;
}

static int non_negative_offset(JNIEnv* env, jlong value, const char* what) {
    if (value >= 0) {
        return 1;
    }
    char message[160];
    snprintf(message, sizeof message, "%s of %lld: must not be negative", what, (long long)value);
    vkfj_throw(env, VKF_ERROR_INVALID_ARGUMENT, message);
    return 0;
}

JNIEXPORT jlong JNICALL Java_org_vkformer_Native_modelLoadFd(JNIEnv* env, jclass c, jlong ctx, jobject fd_object,
                                                             jlong offset, jlong length, jint weights,
                                                             jint max_tokens) {
    (void)c;
    jint fd = -1;
    if (!vkfj_non_negative(env, weights, "weights") || !vkfj_non_negative(env, max_tokens, "maxTokens") ||
        !non_negative_offset(env, offset, "offset") || !non_negative_offset(env, length, "length") ||
        !descriptor_of(env, fd_object, &fd)) {
        return 0;
    }
    vkf_model_params p = model_params(weights, max_tokens);
    vkf_model* out = NULL;
    vkf_status s = vkf_model_load_fd(VKFJ_PTR(vkf_context, ctx), (int)fd, (uint64_t)offset, (uint64_t)length, &p, &out);
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
        return 0;
    }
    return VKFJ_HANDLE(out);
}

JNIEXPORT void JNICALL Java_org_vkformer_Native_modelFree(JNIEnv* env, jclass c, jlong h) {
    (void)c;
    vkf_status s = vkf_model_free(VKFJ_PTR(vkf_model, h));
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
    }
}

static int model_info(JNIEnv* env, jlong h, vkf_model_info* info) {
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    vkf_status s = vkf_model_get_info(VKFJ_PTR(vkf_model, h), info);
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
        return 0;
    }
    return 1;
}

JNIEXPORT jintArray JNICALL Java_org_vkformer_Native_modelInfo(JNIEnv* env, jclass c, jlong h) {
    (void)c;
    vkf_model_info i;
    if (!model_info(env, h, &i)) {
        return NULL;
    }
    const jint v[7] = {(jint)i.vocab_size, (jint)i.hidden_size, (jint)i.n_layer, (jint)i.n_head,
                       (jint)i.n_kv_head,  (jint)i.weights,     (jint)i.bos};
    jintArray out = (*env)->NewIntArray(env, 7);
    if (out != NULL) {
        (*env)->SetIntArrayRegion(env, out, 0, 7, v);
    }
    return out;
}

JNIEXPORT jbyteArray JNICALL Java_org_vkformer_Native_modelFamily(JNIEnv* env, jclass c, jlong h) {
    (void)c;
    vkf_model_info i;
    if (!model_info(env, h, &i)) {
        return NULL;
    }
    size_t n = 0;
    while (n < sizeof i.family && i.family[n] != '\0') {
        n++;
    }
    return vkfj_bytes(env, i.family, n);
}

/* ---- Tokenizers ---- */

JNIEXPORT jlong JNICALL Java_org_vkformer_Native_tokenizerLoad(JNIEnv* env, jclass c, jbyteArray path) {
    (void)c;
    int ok;
    char* p = vkfj_cstring(env, path, &ok);
    if (!ok) {
        return 0;
    }
    vkf_tokenizer* out = NULL;
    vkf_status s = vkf_tokenizer_load(p, &out);
    free(p);
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
        return 0;
    }
    return VKFJ_HANDLE(out);
}

JNIEXPORT void JNICALL Java_org_vkformer_Native_tokenizerFree(JNIEnv* env, jclass c, jlong h) {
    (void)c;
    vkf_status s = vkf_tokenizer_free(VKFJ_PTR(vkf_tokenizer, h));
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
    }
}

JNIEXPORT jint JNICALL Java_org_vkformer_Native_tokenizerVocabSize(JNIEnv* env, jclass c, jlong h) {
    (void)c;
    uint32_t n = 0;
    vkf_status s = vkf_tokenizer_vocab_size(VKFJ_PTR(vkf_tokenizer, h), &n);
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
    }
    return (jint)n;
}

JNIEXPORT jintArray JNICALL Java_org_vkformer_Native_tokenize(JNIEnv* env, jclass c, jlong h, jbyteArray text,
                                                              jboolean add_special) {
    (void)c;
    const vkf_tokenizer* t = VKFJ_PTR(vkf_tokenizer, h);
    jsize length = (*env)->GetArrayLength(env, text);
    jbyte* bytes = (*env)->GetByteArrayElements(env, text, NULL);
    if (bytes == NULL) {
        return NULL;
    }
    size_t n = 0;
    uint32_t* ids = NULL;
    vkf_status s = vkf_tokenize(t, (const char*)bytes, (size_t)length, add_special, NULL, 0, &n);
    if (s == VKF_ERROR_BUFFER_TOO_SMALL) {
        ids = malloc(n * sizeof *ids);
        s = ids != NULL ? vkf_tokenize(t, (const char*)bytes, (size_t)length, add_special, ids, n, &n)
                        : VKF_ERROR_OUT_OF_MEMORY;
    }
    (*env)->ReleaseByteArrayElements(env, text, bytes, JNI_ABORT);
    jintArray out = NULL;
    if (s == VKF_ERROR_OUT_OF_MEMORY && ids == NULL) {
        vkfj_throw(env, s, "out of host memory for token ids");
    } else if (s != VKF_OK) {
        vkfj_throw_status(env, s);
    } else if ((out = (*env)->NewIntArray(env, (jsize)n)) != NULL && n > 0) {
        (*env)->SetIntArrayRegion(env, out, 0, (jsize)n, (const jint*)ids);
    }
    free(ids);
    return out;
}

JNIEXPORT jbyteArray JNICALL Java_org_vkformer_Native_detokenize(JNIEnv* env, jclass c, jlong h, jintArray ids,
                                                                 jboolean skip_special) {
    (void)c;
    int ok;
    size_t n_ids;
    uint32_t* in = vkfj_ids(env, ids, &n_ids, &ok);
    if (!ok) {
        return NULL;
    }
    const vkf_tokenizer* t = VKFJ_PTR(vkf_tokenizer, h);
    size_t length = 0;
    char* text = NULL;
    vkf_status s = vkf_detokenize(t, in, n_ids, skip_special, NULL, 0, &length);
    if (s == VKF_ERROR_BUFFER_TOO_SMALL) {
        text = malloc(length + 1);
        s = text != NULL ? vkf_detokenize(t, in, n_ids, skip_special, text, length + 1, &length)
                         : VKF_ERROR_OUT_OF_MEMORY;
    }
    free(in);
    jbyteArray out = NULL;
    if (s == VKF_ERROR_OUT_OF_MEMORY && text == NULL) {
        vkfj_throw(env, s, "out of host memory for the text");
    } else if (s != VKF_OK) {
        vkfj_throw_status(env, s);
    } else {
        out = vkfj_bytes(env, text, length);
    }
    free(text);
    return out;
}

/* ---- Encoders ---- */

JNIEXPORT jlong JNICALL Java_org_vkformer_Native_encoderLoad(JNIEnv* env, jclass c, jlong ctx, jbyteArray dir,
                                                             jint weights) {
    (void)c;
    int ok;
    char* path = vkfj_cstring(env, dir, &ok);
    if (!ok) {
        return 0;
    }
    vkf_encoder_params p = vkf_encoder_default_params();
    p.weights = (uint32_t)weights;
    vkf_encoder* out = NULL;
    vkf_status s = vkf_encoder_load(VKFJ_PTR(vkf_context, ctx), path, &p, &out);
    free(path);
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
        return 0;
    }
    return VKFJ_HANDLE(out);
}

JNIEXPORT void JNICALL Java_org_vkformer_Native_encoderFree(JNIEnv* env, jclass c, jlong h) {
    (void)c;
    vkf_status s = vkf_encoder_free(VKFJ_PTR(vkf_encoder, h));
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
    }
}

JNIEXPORT jint JNICALL Java_org_vkformer_Native_encoderHiddenSize(JNIEnv* env, jclass c, jlong h) {
    (void)c;
    uint32_t n = 0;
    vkf_status s = vkf_encoder_hidden_size(VKFJ_PTR(vkf_encoder, h), &n);
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
    }
    return (jint)n;
}

JNIEXPORT jfloatArray JNICALL Java_org_vkformer_Native_embed(JNIEnv* env, jclass c, jlong h, jintArray ids,
                                                             jint pooling, jboolean normalize) {
    (void)c;
    vkf_encoder* e = VKFJ_PTR(vkf_encoder, h);
    uint32_t hidden = 0;
    vkf_status s = vkf_encoder_hidden_size(e, &hidden);
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
        return NULL;
    }
    int ok;
    size_t n_ids;
    uint32_t* in = vkfj_ids(env, ids, &n_ids, &ok);
    if (!ok) {
        return NULL;
    }
    const size_t capacity = (size_t)hidden * (pooling == VKF_POOLING_NONE ? n_ids : 1);
    float* values = malloc(capacity > 0 ? capacity * sizeof(float) : 1);
    size_t n = 0;
    s = values != NULL ? vkf_embed(e, in, n_ids, (uint32_t)pooling, normalize, values, capacity, &n)
                       : VKF_ERROR_OUT_OF_MEMORY;
    free(in);
    jfloatArray out = NULL;
    if (s == VKF_ERROR_OUT_OF_MEMORY && values == NULL) {
        vkfj_throw(env, s, "out of host memory for the embedding");
    } else if (s != VKF_OK) {
        vkfj_throw_status(env, s);
    } else if ((out = (*env)->NewFloatArray(env, (jsize)n)) != NULL && n > 0) {
        (*env)->SetFloatArrayRegion(env, out, 0, (jsize)n, values);
    }
    free(values);
    return out;
}
