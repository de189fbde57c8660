package org.vkformer;

import java.io.FileDescriptor;
import java.nio.charset.StandardCharsets;

/**
 * A decoder model's weights on the device (vkf_model), loaded from a directory holding config.json
 * and safetensors, a llama.cpp GGUF file's path, or a GGUF held in part of an open file (an
 * Android asset).
 */
public final class Model extends NativeHandle {
    /** vkf_weight_format. */
    public static final int WEIGHTS_DEFAULT = 0, WEIGHTS_F32 = 1, WEIGHTS_F16 = 2, WEIGHTS_Q8_0 = 3, WEIGHTS_Q4_0 = 4;

    /** vkf_model_params. */
    public static final class Options {
        public int weights = WEIGHTS_DEFAULT;
        /** Tokens of the sessions it is loaded for: refused before uploading when they would not fit. 0: weights only. */
        public int maxTokens;
    }

    /** vkf_memory_estimate: what loading would take, from config.json alone. */
    public static final class MemoryEstimate {
        public final long weights, kvCache, activations, total, available;
        public final boolean fits;

        MemoryEstimate(long[] v) {
            weights = v[0];
            kvCache = v[1];
            activations = v[2];
            total = v[3];
            available = v[4];
            fits = v[5] != 0;
        }
    }

    private final int[] info;

    public Model(Context context, String dir) {
        this(context, dir, new Options());
    }

    public Model(Context context, String dir, Options o) {
        this(load(context, dir, o));
    }

    /**
     * A GGUF held in bytes [offset, offset + length) of the regular file open as fd: an asset
     * stored uncompressed in an APK, from AssetFileDescriptor's getFileDescriptor(),
     * getStartOffset() and getLength() (vkf_model_load_fd). The descriptor is duplicated: close
     * it, or the AssetFileDescriptor, once this returns. A closed descriptor, one that is not a
     * regular file, or a range past its end throws VkformerException (VKF_ERROR_IO); a negative
     * offset or length VKF_ERROR_INVALID_ARGUMENT; bytes that hold no GGUF model VKF_ERROR_MODEL.
     * Text needs a tokenizer: new Tokenizer(path) of the same GGUF file, or a tokenizer.json.
     */
    public Model(Context context, FileDescriptor fd, long offset, long length) {
        this(context, fd, offset, length, new Options());
    }

    public Model(Context context, FileDescriptor fd, long offset, long length, Options o) {
        this(loadFd(context, fd, offset, length, o));
    }

    private Model(long handle) {
        super("Model", handle, Native::modelFree);
        long h = acquire();
        try {
            info = Native.modelInfo(h);
        } finally {
            release();
        }
    }

    private static long load(Context context, String dir, Options o) {
        long c = context.acquire();
        try {
            return Native.modelLoad(c, Vkformer.utf8(dir), o.weights, o.maxTokens, 0);
        } finally {
            context.release();
        }
    }

    private static long loadFd(Context context, FileDescriptor fd, long offset, long length, Options o) {
        long c = context.acquire();
        try {
            return Native.modelLoadFd(c, fd, offset, length, o.weights, o.maxTokens);
        } finally {
            context.release();
        }
    }

    public static MemoryEstimate estimate(Context context, String dir, Options o) {
        long c = context.acquire();
        try {
            return new MemoryEstimate(Native.modelEstimate(c, Vkformer.utf8(dir), o.weights, o.maxTokens));
        } finally {
            context.release();
        }
    }

    public int vocabSize() {
        return info[0];
    }

    public int hiddenSize() {
        return info[1];
    }

    public int layers() {
        return info[2];
    }

    /** "bloom", "mpt", "falcon", "baichuan", "jais", "refact". */
    public String family() {
        long h = acquire();
        try {
            return new String(Native.modelFamily(h), StandardCharsets.UTF_8);
        } finally {
            release();
        }
    }
}
