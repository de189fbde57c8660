/* The JNI glue: sessions and generation, with each token handed to org.vkformer.TokenSink on
 * the generating thread (helpers and errors: vkformer_jni.c). */
#include "vkformer_jni.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

JNIEXPORT jlong JNICALL Java_org_vkformer_Native_sessionCreate(JNIEnv* env, jclass c, jlong model, jint max_tokens,
                                                               jint chunk, jint kv_k, jint kv_v,
                                                               jboolean prefix_cache) {
    (void)c;
    if (!vkfj_non_negative(env, max_tokens, "maxTokens") || !vkfj_non_negative(env, chunk, "chunk")) {
        return 0;
    }
    vkf_session_params p = vkf_session_default_params();
    p.max_tokens = (uint32_t)max_tokens;
    p.chunk = (uint32_t)chunk;
    p.kv_k = (uint32_t)kv_k; /* KvFormat codes: vkf_kv_format */
    p.kv_v = (uint32_t)kv_v;
    p.prefix_cache = prefix_cache ? 1 : 0;
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

static jmethodID sink_accept_logprobs; /* TokenSink.acceptLogprobs(int, double, int[], double[]) */

/* vkf_logprobs_fn: the token's logprobs to the sink, before on_token hands it the token. It cannot
 * stop the generation itself: after an exception, the token callback does. */
static void on_logprobs(uint32_t index, const vkf_logprob* chosen, const vkf_logprob* top, size_t n_top,
                        void* user_data) {
    (void)index; /* the sink keeps them in order */
    generation* g = user_data;
    JNIEnv* env = NULL;
    if ((*vkfj_vm)->GetEnv(vkfj_vm, (void**)&env, JNI_VERSION_1_6) != JNI_OK || env != g->env) {
        g->wrong_thread = 1;
        return;
    }
    if (g->stopped_by_java) {
        return;
    }
    jint* ids = malloc(n_top > 0 ? n_top * sizeof *ids : 1);
    jdouble* values = malloc(n_top > 0 ? n_top * sizeof *values : 1);
    jintArray top_ids = NULL;
    jdoubleArray top_values = NULL;
    if (ids == NULL || values == NULL) {
        vkfj_throw(env, VKF_ERROR_OUT_OF_MEMORY, "out of host memory for the logprobs");
    } else if ((top_ids = (*env)->NewIntArray(env, (jsize)n_top)) != NULL &&
               (top_values = (*env)->NewDoubleArray(env, (jsize)n_top)) != NULL) {
        for (size_t i = 0; i < n_top; ++i) {
            ids[i] = (jint)top[i].token;
            values[i] = top[i].logprob;
        }
        (*env)->SetIntArrayRegion(env, top_ids, 0, (jsize)n_top, ids);
        (*env)->SetDoubleArrayRegion(env, top_values, 0, (jsize)n_top, values);
        (*env)->CallVoidMethod(env, g->sink, sink_accept_logprobs, (jint)chosen->token, (jdouble)chosen->logprob,
                               top_ids, top_values);
    }
    free(ids);
    free(values);
    if (top_ids != NULL) {
        (*env)->DeleteLocalRef(env, top_ids);
    }
    if (top_values != NULL) {
        (*env)->DeleteLocalRef(env, top_values);
    }
    if ((*env)->ExceptionCheck(env)) {
        g->stopped_by_java = 1;
    }
}

/* org.vkformer.GenerateOptions' fields and GenerateResult's constructor, looked up once. */
static jfieldID options_max_new_tokens, options_temperature, options_top_k, options_top_p, options_seed,
    options_stop_ids, options_use_model_eos, options_min_p, options_typical_p, options_repetition_penalty,
    options_presence_penalty, options_frequency_penalty, options_penalty_last_n, options_bias_ids, options_bias_values,
    options_logprobs, options_top_logprobs;
static jclass result_class;
static jmethodID result_init;

int vkfj_generate_load(JNIEnv* env) {
    jclass options = (*env)->FindClass(env, "org/vkformer/GenerateOptions");
    if (options == NULL) {
        return 0;
    }
    options_max_new_tokens = (*env)->GetFieldID(env, options, "maxNewTokens", "I");
    options_temperature = (*env)->GetFieldID(env, options, "temperature", "F");
    options_top_k = (*env)->GetFieldID(env, options, "topK", "I");
    options_top_p = (*env)->GetFieldID(env, options, "topP", "F");
    options_seed = (*env)->GetFieldID(env, options, "seed", "J");
    options_stop_ids = (*env)->GetFieldID(env, options, "stopIds", "[I");
    options_use_model_eos = (*env)->GetFieldID(env, options, "useModelEos", "Z");
    options_min_p = (*env)->GetFieldID(env, options, "minP", "F");
    options_typical_p = (*env)->GetFieldID(env, options, "typicalP", "F");
    options_repetition_penalty = (*env)->GetFieldID(env, options, "repetitionPenalty", "F");
    options_presence_penalty = (*env)->GetFieldID(env, options, "presencePenalty", "F");
    options_frequency_penalty = (*env)->GetFieldID(env, options, "frequencyPenalty", "F");
    options_penalty_last_n = (*env)->GetFieldID(env, options, "penaltyLastN", "I");
    options_bias_ids = (*env)->GetFieldID(env, options, "logitBiasIds", "[I");
    options_bias_values = (*env)->GetFieldID(env, options, "logitBiasValues", "[F");
    options_logprobs = (*env)->GetFieldID(env, options, "logprobs", "Z");
    options_top_logprobs = (*env)->GetFieldID(env, options, "topLogprobs", "I");
    (*env)->DeleteLocalRef(env, options);
    jclass sink = (*env)->FindClass(env, "org/vkformer/TokenSink");
    if (sink == NULL) {
        return 0;
    }
    sink_accept_logprobs = (*env)->GetMethodID(env, sink, "acceptLogprobs", "(ID[I[D)V");
    (*env)->DeleteLocalRef(env, sink);
    jclass result = (*env)->FindClass(env, "org/vkformer/GenerateResult");
    if (result == NULL) {
        return 0;
    }
    result_class = (jclass)(*env)->NewGlobalRef(env, result);
    (*env)->DeleteLocalRef(env, result);
    result_init = result_class != NULL
                      ? (*env)->GetMethodID(env, result_class, "<init>", "(IIIDDLorg/vkformer/TokenSink;)V")
                      : NULL;
    return options_max_new_tokens != NULL && options_temperature != NULL && options_top_k != NULL &&
           options_top_p != NULL && options_seed != NULL && options_stop_ids != NULL && options_use_model_eos != NULL &&
           options_min_p != NULL && options_typical_p != NULL && options_repetition_penalty != NULL &&
           options_presence_penalty != NULL && options_frequency_penalty != NULL && options_penalty_last_n != NULL &&
           options_bias_ids != NULL && options_bias_values != NULL && options_logprobs != NULL &&
           options_top_logprobs != NULL && sink_accept_logprobs != NULL && result_init != NULL;
}

void vkfj_generate_unload(JNIEnv* env) {
    if (result_class != NULL) {
        (*env)->DeleteGlobalRef(env, result_class);
        result_class = NULL;
    }
}

/* logitBiasIds and logitBiasValues into the sampler's bias, malloc'ed into *bias (free it); 0 with
 * an exception thrown when they are refused. */
static int read_bias(JNIEnv* env, jobject options, vkf_sampling_params* sampling, vkf_logit_bias** bias) {
    jintArray ids = (jintArray)(*env)->GetObjectField(env, options, options_bias_ids);
    jfloatArray values = (jfloatArray)(*env)->GetObjectField(env, options, options_bias_values);
    int ok = 1;
    if (ids == NULL || values == NULL || (*env)->GetArrayLength(env, ids) != (*env)->GetArrayLength(env, values)) {
        vkfj_throw(env, VKF_ERROR_INVALID_ARGUMENT,
                   "logitBiasIds and logitBiasValues must be arrays of the same length");
        ok = 0;
    }
    size_t n = 0;
    uint32_t* tokens = ok ? vkfj_ids(env, ids, &n, &ok) : NULL;
    if (ok && n > 0) {
        *bias = malloc(n * sizeof **bias);
        if (*bias == NULL) {
            vkfj_throw(env, VKF_ERROR_OUT_OF_MEMORY, "out of host memory for the logit bias");
            ok = 0;
        } else {
            for (size_t i = 0; i < n; ++i) {
                jfloat value = 0.0f;
                (*env)->GetFloatArrayRegion(env, values, (jsize)i, 1, &value);
                (*bias)[i].token = tokens[i];
                (*bias)[i].bias = value;
            }
            sampling->logit_bias = *bias;
            sampling->n_logit_bias = n;
        }
    }
    free(tokens);
    if (ids != NULL) {
        (*env)->DeleteLocalRef(env, ids);
    }
    if (values != NULL) {
        (*env)->DeleteLocalRef(env, values);
    }
    return ok;
}

/* GenerateOptions into the C API's params; 0 with an exception thrown when one is refused. The
 * stop ids are malloc'ed into *stops and the bias into *bias (free them). */
static int read_options(JNIEnv* env, jobject options, vkf_generate_params* p, vkf_sampling_params* sampling,
                        uint32_t** stops, vkf_logit_bias** bias) {
    *stops = NULL;
    *bias = NULL;
    if (options == NULL) {
        vkfj_throw(env, VKF_ERROR_INVALID_ARGUMENT, "options is null");
        return 0;
    }
    const jint max_new_tokens = (*env)->GetIntField(env, options, options_max_new_tokens);
    const jint top_k = (*env)->GetIntField(env, options, options_top_k);
    if (!vkfj_non_negative(env, max_new_tokens, "maxNewTokens") || !vkfj_non_negative(env, top_k, "topK")) {
        return 0;
    }
    sampling->temperature = (*env)->GetFloatField(env, options, options_temperature);
    sampling->top_k = (uint32_t)top_k;
    sampling->top_p = (*env)->GetFloatField(env, options, options_top_p);
    sampling->seed = (uint64_t)(*env)->GetLongField(env, options, options_seed);
    sampling->min_p = (*env)->GetFloatField(env, options, options_min_p);
    sampling->typical_p = (*env)->GetFloatField(env, options, options_typical_p);
    sampling->repetition_penalty = (*env)->GetFloatField(env, options, options_repetition_penalty);
    sampling->presence_penalty = (*env)->GetFloatField(env, options, options_presence_penalty);
    sampling->frequency_penalty = (*env)->GetFloatField(env, options, options_frequency_penalty);
    const jint last_n = (*env)->GetIntField(env, options, options_penalty_last_n);
    if (!vkfj_non_negative(env, last_n, "penaltyLastN")) {
        return 0;
    }
    sampling->penalty_last_n = (uint32_t)last_n;
    if (!read_bias(env, options, sampling, bias)) {
        return 0;
    }
    const jboolean logprobs = (*env)->GetBooleanField(env, options, options_logprobs);
    const jint top_logprobs = (*env)->GetIntField(env, options, options_top_logprobs);
    if (!vkfj_non_negative(env, top_logprobs, "topLogprobs")) {
        return 0;
    }
    if (!logprobs && top_logprobs > 0) {
        char message[120];
        snprintf(message, sizeof message, "topLogprobs is %d with logprobs false", (int)top_logprobs);
        vkfj_throw(env, VKF_ERROR_INVALID_ARGUMENT, message);
        return 0;
    }
    if (logprobs) {
        p->on_logprobs = on_logprobs;
        p->n_logprobs = (uint32_t)top_logprobs;
    }
    p->max_new_tokens = (uint32_t)max_new_tokens;
    p->use_model_eos = (*env)->GetBooleanField(env, options, options_use_model_eos) ? 1 : 0;
    p->sampling = sampling;
    jintArray stop_ids = (jintArray)(*env)->GetObjectField(env, options, options_stop_ids);
    int ok = 1;
    *stops = vkfj_ids(env, stop_ids, &p->n_stop_ids, &ok);
    p->stop_ids = *stops;
    if (stop_ids != NULL) {
        (*env)->DeleteLocalRef(env, stop_ids);
    }
    return ok;
}

JNIEXPORT jobject JNICALL Java_org_vkformer_Native_generate(JNIEnv* env, jclass c, jlong session, jintArray prompt,
                                                            jbyteArray prompt_text, jlong tokenizer, jobject options,
                                                            jobject sink, jlong cancel) {
    (void)c;
    vkf_sampling_params sampling = vkf_sampling_default_params();
    vkf_generate_params p = vkf_generate_default_params();
    uint32_t* stops = NULL;
    vkf_logit_bias* bias = NULL;
    if (!read_options(env, options, &p, &sampling, &stops, &bias)) {
        free(stops);
        free(bias);
        return NULL;
    }
    int ok1 = 1, ok3 = 1;
    size_t n_prompt = 0;
    uint32_t* ids = vkfj_ids(env, prompt, &n_prompt, &ok1);
    char* text = NULL;
    size_t text_length = 0;
    if (ok1 && prompt_text != NULL) {
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
    jobject out = NULL;
    if (ok1 && ok3) {
        generation g = {.env = env, .sink = sink};
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
        } else {
            /* The tokens are the sink's (one per callback): vkf_generate_text returns none. */
            out = (*env)->NewObject(env, result_class, result_init, (jint)r.n_prompt_tokens, (jint)r.n_cached_tokens,
                                    (jint)r.stop, (jdouble)r.prefill_seconds, (jdouble)r.decode_seconds, sink);
        }
    }
    free(ids);
    free(stops);
    free(bias);
    free(text);
    return out;
}
