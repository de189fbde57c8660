package org.vkformer;

import java.io.FileDescriptor;

/**
 * The native glue (libvkformer_jni, bindings/java/native): one static method per C call.
 * Strings cross as UTF-8 byte arrays (NUL-terminated by the glue), not as JNI's modified UTF-8.
 * Failures throw VkformerException with vkf_last_error()'s message.
 */
final class Native {
    private Native() {}

    static {
        String path = System.getProperty("org.vkformer.library");
        if (path != null) {
            System.load(path);
        } else {
            System.loadLibrary("vkformer_jni");
        }
    }

    static native byte[] versionString();
    static native int abiVersion();

    static native long cancelCreate();
    static native void cancelRequest(long cancel);
    static native void cancelReset(long cancel);
    static native void cancelFree(long cancel);

    static native long contextCreate(int deviceIndex, byte[] deviceName, int validation, byte[] limits,
                                     byte[] pipelineCacheDir);
    static native void contextFree(long context);
    /** The device's name (UTF-8) after the context's limits. */
    static native byte[] contextDeviceName(long context);
    static native long contextMemoryAvailable(long context);

    /** {weights, kv_cache, activations, total, available, fits}. */
    static native long[] modelEstimate(long context, byte[] dir, int weights, int maxTokens);
    static native long modelLoad(long context, byte[] dir, int weights, int maxTokens, long cancel);
    /** vkf_model_load_fd with the descriptor of fd (its "fd" field; Android's "descriptor"). */
    static native long modelLoadFd(long context, FileDescriptor fd, long offset, long length, int weights,
                                   int maxTokens);
    static native void modelFree(long model);
    /** {vocab_size, hidden_size, n_layer, n_head, n_kv_head, weights, bos}. */
    static native int[] modelInfo(long model);
    static native byte[] modelFamily(long model);

    static native long tokenizerLoad(byte[] path);
    static native void tokenizerFree(long tokenizer);
    static native int tokenizerVocabSize(long tokenizer);
    static native int[] tokenize(long tokenizer, byte[] text, boolean addSpecial);
    static native byte[] detokenize(long tokenizer, int[] ids, boolean skipSpecial);

    static native long sessionCreate(long model, int maxTokens, int chunk, int kvK, int kvV, boolean prefixCache);
    static native void sessionFree(long session);
    static native void sessionReset(long session);
    static native int sessionPosition(long session);
    /** vkf_session_save_state into a new array; vkf_session_load_state from one. */
    static native byte[] sessionSaveState(long session);
    static native void sessionLoadState(long session, byte[] state);
    /** vkf_session_save_state_file (save) or vkf_session_load_state_file. */
    static native void sessionStateFile(long session, byte[] path, boolean save);

    /**
     * vkf_generate (promptText null) or vkf_generate_text with the options' settings; each token
     * goes to sink.accept, and the result's tokens are the sink's.
     */
    static native GenerateResult generate(long session, int[] prompt, byte[] promptText, long tokenizer,
                                          GenerateOptions options, TokenSink sink, long cancel);

    static native long encoderLoad(long context, byte[] dir, int weights);
    static native void encoderFree(long encoder);
    static native int encoderHiddenSize(long encoder);
    static native float[] embed(long encoder, int[] ids, int pooling, boolean normalize);
}
