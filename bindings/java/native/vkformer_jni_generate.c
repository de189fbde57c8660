/* The JNI glue: sessions and generation, with each token handed to org.vkformer.TokenSink on
 * the generating thread (helpers and errors: vkformer_jni.c). */
#include "vkformer_jni.h"

#include <stdlib.h>
#include <string.h>

JNIEXPORT jlong JNICALL Java_org_vkformer_Native_sessionCreate(JNIEnv* env, jclass c, jlong model, jint max_tokens,
                                                               jint chunk, jint kv_k, jint kv_v) {
    (void)c;
    if (!vkfj_non_negative(env, max_tokens, "maxTokens") || !vkfj_non_negative(env, chunk, "chunk")) {
        return 0;
    }
    vkf_session_params p = vkf_session_default_params();
    p.max_tokens = (uint32_t)max_tokens;
    p.chunk = (uint32_t)chunk;
    p.kv_k = (uint32_t)kv_k; /* KvFormat codes: vkf_kv_format */
    p.kv_v = (uint32_t)kv_v;
    vkf_session* out = NULL;
    vkf_status s = vkf_session_create(VKFJ_PTR(vkf_model, model), &p, &out);
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
        return 0;
    }
    return VKFJ_HANDLE(out);
}

JNIEXPORT void JNICALL Java_org_vkformer_Native_sessionFree(JNIEnv* env, jclass c, jlong h) {
    (void)c;
    vkf_status s = vkf_session_free(VKFJ_PTR(vkf_session, h));
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
    }
}

JNIEXPORT void JNICALL Java_org_vkformer_Native_sessionReset(JNIEnv* env, jclass c, jlong h) {
    (void)c;
    vkf_status s = vkf_session_reset(VKFJ_PTR(vkf_session, h));
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
    }
}

JNIEXPORT jint JNICALL Java_org_vkformer_Native_sessionPosition(JNIEnv* env, jclass c, jlong h) {
    (void)c;
    uint32_t position = 0;
    vkf_status s = vkf_session_position(VKFJ_PTR(vkf_session, h), &position);
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
    }
    return (jint)position;
}

/* The token callback's state: the calling thread's JNIEnv (the C API calls back on the thread
 * that called vkf_generate) and whether Java threw, after which nothing more is called and
 * the exception goes back to Java as it is. */
typedef struct generation {
    JNIEnv* env;
    jobject sink;
    int stopped_by_java; /* an exception is pending */
    int wrong_thread;
} generation;

static int on_token(uint32_t token, const char* text, size_t length, void* user_data) {
    generation* g = user_data;
    JNIEnv* env = NULL;
    if ((*vkfj_vm)->GetEnv(vkfj_vm, (void**)&env, JNI_VERSION_1_6) != JNI_OK || env != g->env) {
        g->wrong_thread = 1;
        return 1;
    }
    if (g->stopped_by_java) {
        return 1;
    }
    jbyteArray bytes = NULL;
    if (text != NULL && (bytes = vkfj_bytes(env, text, length)) == NULL) {
        g->stopped_by_java = 1; /* OutOfMemoryError */
        return 1;
    }
    const jint id = token == VKF_TOKEN_NONE ? -1 : (jint)token;
    const jboolean go_on = (*env)->CallBooleanMethod(env, g->sink, vkfj_sink_accept, id, bytes);
    if (bytes != NULL) {
        (*env)->DeleteLocalRef(env, bytes); /* one per token: a long generation must not pile them up */
    }
    if ((*env)->ExceptionCheck(env)) {
        g->stopped_by_java = 1;
        return 1;
    }
    return go_on ? 0 : 1;
}

JNIEXPORT jdoubleArray JNICALL Java_org_vkformer_Native_generate(JNIEnv* env, jclass c, jlong session, jintArray prompt,
                                                                 jbyteArray prompt_text, jlong tokenizer,
                                                                 jint max_new_tokens, jfloat temperature, jint top_k,
                                                                 jfloat top_p, jlong seed, jintArray stop_ids,
                                                                 jboolean use_model_eos, jobject sink, jlong cancel) {
    (void)c;
    if (!vkfj_non_negative(env, max_new_tokens, "maxNewTokens") || !vkfj_non_negative(env, top_k, "topK")) {
        return NULL;
    }
    int ok1 = 1, ok2 = 1, ok3 = 1;
    size_t n_prompt = 0, n_stop = 0;
    uint32_t* ids = vkfj_ids(env, prompt, &n_prompt, &ok1);
    uint32_t* stops = ok1 ? vkfj_ids(env, stop_ids, &n_stop, &ok2) : NULL;
    char* text = NULL;
    size_t text_length = 0;
    if (ok1 && ok2 && prompt_text != NULL) {
        text_length = (size_t)(*env)->GetArrayLength(env, prompt_text);
        text = malloc(text_length + 1);
        if (text == NULL) {
            ok3 = 0;
            vkfj_throw(env, VKF_ERROR_OUT_OF_MEMORY, "out of host memory for the prompt");
        } else {
            (*env)->GetByteArrayRegion(env, prompt_text, 0, (jsize)text_length, (jbyte*)text);
            text[text_length] = '\0';
        }
    }
    jdoubleArray out = NULL;
    if (ok1 && ok2 && ok3) {
        vkf_sampling_params sampling = vkf_sampling_default_params();
        sampling.temperature = temperature;
        sampling.top_k = (uint32_t)top_k;
        sampling.top_p = top_p;
        sampling.seed = (uint64_t)seed;
        generation g = {.env = env, .sink = sink};
        vkf_generate_params p = vkf_generate_default_params();
        p.max_new_tokens = (uint32_t)max_new_tokens;
        p.sampling = &sampling;
        p.stop_ids = stops;
        p.n_stop_ids = n_stop;
        p.use_model_eos = use_model_eos;
        p.tokenizer = VKFJ_PTR(const vkf_tokenizer, tokenizer);
        p.on_token = on_token;
        p.user_data = &g;
        p.cancel = VKFJ_PTR(vkf_cancel, cancel);
        vkf_generate_result r;
        memset(&r, 0, sizeof r);
        r.struct_size = sizeof r;
        vkf_session* s = VKFJ_PTR(vkf_session, session);
        vkf_status status = text != NULL ? vkf_generate_text(s, text, text_length, &p, &r)
                                         : vkf_generate(s, ids, n_prompt, &p, NULL, 0, &r);
        if (g.stopped_by_java) {
            /* The callback's exception (or OutOfMemoryError) is pending: it is the answer. */
        } else if (status != VKF_OK) {
            vkfj_throw_status(env, status);
        } else if (g.wrong_thread) {
            vkfj_throw(env, VKF_ERROR_INTERNAL, "the token callback came on a thread other than the generating one");
        } else if ((out = (*env)->NewDoubleArray(env, 5)) != NULL) {
            const jdouble v[5] = {r.n_prompt_tokens, r.n_tokens, r.stop, r.prefill_seconds, r.decode_seconds};
            (*env)->SetDoubleArrayRegion(env, out, 0, 5, v);
        }
    }
    free(ids);
    free(stops);
    free(text);
    return out;
}
