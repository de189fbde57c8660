/* The JNI glue's shared helpers (vkformer_jni.c): org.vkformer.Native's methods over the C API
 * (include/vkformer/vkformer.h) only. Strings cross as UTF-8 byte arrays; every failed C call
 * becomes a VkformerException carrying vkf_last_error()'s message; nothing returns to Java with
 * a C handle freed under it (the Java classes' locks see to that). */
#ifndef VKFORMER_JNI_H
#define VKFORMER_JNI_H

#include <jni.h>
#include <stdint.h>

#include "vkformer/vkformer.h"

/* org.vkformer.TokenSink.accept(int, byte[]): the generation callback's way into Java. */
extern jmethodID vkfj_sink_accept;
extern JavaVM* vkfj_vm;

/* Looks up GenerateOptions' fields and GenerateResult's constructor (JNI_OnLoad; 0 on failure,
 * an exception pending) and drops its global reference (JNI_OnUnload): vkformer_jni_generate.c. */
int vkfj_generate_load(JNIEnv* env);
void vkfj_generate_unload(JNIEnv* env);

/* Throws VkformerException for a failed C call (status and vkf_last_error()). */
void vkfj_throw_status(JNIEnv* env, vkf_status status);
/* Throws VkformerException for a refusal of the glue's own, with `message`. */
void vkfj_throw(JNIEnv* env, vkf_status status, const char* message);
/* A NUL-terminated copy of a UTF-8 byte array (NULL for a null array with *ok = 1); *ok = 0 and
 * an exception thrown on an allocation failure or an embedded NUL. Free with free(). */
char* vkfj_cstring(JNIEnv* env, jbyteArray bytes, int* ok);
/* A copy of an int[] as uint32_t (NULL for null or empty; *n its length); *ok = 0 on failure. */
uint32_t* vkfj_ids(JNIEnv* env, jintArray ids, size_t* n, int* ok);
/* A new byte[] of `length` bytes (NULL with an exception thrown when out of memory). */
jbyteArray vkfj_bytes(JNIEnv* env, const char* data, size_t length);
/* 1 when value is a valid uint32 count (not negative), else throws and returns 0. */
int vkfj_non_negative(JNIEnv* env, jint value, const char* what);

#define VKFJ_PTR(type, h) ((type*)(intptr_t)(h))
#define VKFJ_HANDLE(p) ((jlong)(intptr_t)(p))

#endif
