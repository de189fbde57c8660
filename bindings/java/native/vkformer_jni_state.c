/* The JNI glue: a session's sequence state saved to and loaded from a byte[] or a file
 * (include/vkformer/vkformer_state.h; helpers and errors: vkformer_jni.c). */
#include "vkformer_jni.h"

#include <stdlib.h>

JNIEXPORT jbyteArray JNICALL Java_org_vkformer_Native_sessionSaveState(JNIEnv* env, jclass c, jlong h) {
    (void)c;
    vkf_session* session = VKFJ_PTR(vkf_session, h);
    size_t size = 0;
    vkf_status s = vkf_session_state_size(session, &size);
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
        return NULL;
    }
    if (size > (size_t)0x7fffffff) {
        vkfj_throw(env, VKF_ERROR_OUT_OF_MEMORY, "the state is over a Java array's 2 GiB: save it to a file");
        return NULL;
    }
    char* bytes = malloc(size);
    if (bytes == NULL) {
        vkfj_throw(env, VKF_ERROR_OUT_OF_MEMORY, "out of host memory for the state");
        return NULL;
    }
    s = vkf_session_save_state(session, bytes, size, &size);
    jbyteArray out = NULL;
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
    } else {
        out = vkfj_bytes(env, bytes, size);
    }
    free(bytes);
    return out;
}

JNIEXPORT void JNICALL Java_org_vkformer_Native_sessionLoadState(JNIEnv* env, jclass c, jlong h, jbyteArray state) {
    (void)c;
    if (state == NULL) {
        vkfj_throw(env, VKF_ERROR_INVALID_ARGUMENT, "the state is null");
        return;
    }
    jsize n = (*env)->GetArrayLength(env, state);
    jbyte* bytes = malloc(n > 0 ? (size_t)n : 1);
    if (bytes == NULL) {
        vkfj_throw(env, VKF_ERROR_OUT_OF_MEMORY, "out of host memory for the state");
        return;
    }
    (*env)->GetByteArrayRegion(env, state, 0, n, bytes);
    vkf_status s = vkf_session_load_state(VKFJ_PTR(vkf_session, h), bytes, (size_t)n);
    free(bytes);
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
    }
}

JNIEXPORT void JNICALL Java_org_vkformer_Native_sessionStateFile(JNIEnv* env, jclass c, jlong h, jbyteArray path,
                                                                 jboolean save) {
    (void)c;
    int ok = 0;
    char* file = vkfj_cstring(env, path, &ok);
    if (!ok) {
        return;
    }
    vkf_session* session = VKFJ_PTR(vkf_session, h);
    vkf_status s = save ? vkf_session_save_state_file(session, file) : vkf_session_load_state_file(session, file);
    free(file);
    if (s != VKF_OK) {
        vkfj_throw_status(env, s);
    }
}
