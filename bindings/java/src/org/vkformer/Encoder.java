package org.vkformer;

/** A JinaBERT embedding model (vkf_encoder); used by one thread at a time. */
public final class Encoder extends NativeHandle {
    /** vkf_pooling. */
    public static final int POOLING_NONE = 0, POOLING_MEAN = 1, POOLING_CLS = 2;

    public Encoder(Context context, String dir) {
        super("Encoder", load(context, dir), Native::encoderFree);
    }

    private static long load(Context context, String dir) {
        long c = context.acquire();
        try {
            return Native.encoderLoad(c, Vkformer.utf8(dir), Model.WEIGHTS_DEFAULT);
        } finally {
            context.release();
        }
    }

    public int hiddenSize() {
        long h = acquire();
        try {
            return Native.encoderHiddenSize(h);
        } finally {
            release();
        }
    }

    /** The embedding of ids: [hidden] pooled, or [ids.length * hidden] with POOLING_NONE. */
    public synchronized float[] embed(int[] ids, int pooling, boolean normalize) {
        long h = acquire();
        try {
            return Native.embed(h, ids, pooling, normalize);
        } finally {
            release();
        }
    }
}
