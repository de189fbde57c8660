package org.vkformer;

import java.lang.ref.Cleaner;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A sequence and its KV cache (vkf_session). One thread generates at a time; cancel() may be
 * called from any thread, and close() from another thread cancels the generation and waits for it.
 * From the token callback, only position() and cancel() may be called on the session generating
 * (generate and reset throw IllegalStateException, the generation going on unchanged); close()
 * there cancels the generation and frees the session when generate returns.
 */
public final class Session extends NativeHandle {
    private final ReentrantLock busy = new ReentrantLock();
    // The vkf_cancel: freed after the session, under cancelLock, so that cancel() from another
    // thread never touches a freed one.
    private final Object cancelLock = new Object();
    private long cancel;
    private Cleaner.Cleanable cancelCleanable;

    /** vkf_session_params. */
    public static final class Options {
        /** KV-cache capacity: prompt plus generated tokens. */
        public int maxTokens = 512;
        /** Most prompt tokens per submission; 0: the library's default. */
        public int chunk;
        /** The KV cache's storage of K and of V (a long context in less memory). */
        public KvFormat kvK = KvFormat.F16, kvV = KvFormat.F16;
        /**
         * Keep the full 16-token KV blocks of the sequence reset() ends, and take them for a next
         * prompt that starts with the same tokens (GenerateResult.cachedTokens says how many).
         */
        public boolean prefixCache;

        public Options maxTokens(int n) {
            maxTokens = n;
            return this;
        }

        public Options prefixCache(boolean on) {
            prefixCache = on;
            return this;
        }
    }

    /** @param maxTokens KV-cache capacity: prompt plus generated tokens */
    public Session(Model model, int maxTokens) {
        this(model, maxTokens, 0);
    }

    /** @param chunk most prompt tokens per submission; 0: the library's default */
    public Session(Model model, int maxTokens, int chunk) {
        this(model, maxTokens, chunk, KvFormat.F16, KvFormat.F16);
    }

    /** @param kvK the KV cache's storage of K, kvV that of V (a long context in less memory) */
    public Session(Model model, int maxTokens, int chunk, KvFormat kvK, KvFormat kvV) {
        this(model, options(maxTokens, chunk, kvK, kvV));
    }

    public Session(Model model, Options o) {
        super("Session", create(model, o), Native::sessionFree);
        try {
            cancel = Native.cancelCreate();
            cancelCleanable = register(this, cancel, Native::cancelFree);
        } catch (RuntimeException e) {
            super.close();
            throw e;
        }
    }

    private static Options options(int maxTokens, int chunk, KvFormat kvK, KvFormat kvV) {
        Options o = new Options().maxTokens(maxTokens);
        o.chunk = chunk;
        o.kvK = kvK;
        o.kvV = kvV;
        return o;
    }

    private static long create(Model model, Options o) {
        if (o.kvK == null || o.kvV == null) {
            throw new IllegalArgumentException("kvK and kvV must not be null");
        }
        long m = model.acquire();
        try {
            return Native.sessionCreate(m, o.maxTokens, o.chunk, o.kvK.code, o.kvV.code, o.prefixCache);
        } finally {
            model.release();
        }
    }

    /**
     * Stops the generation running on another thread after its current token
     * (StopReason.CANCELLED), or the next one to start when none is running. Thread-safe.
     */
    public void cancel() {
        synchronized (cancelLock) {
            if (cancel != 0) {
                Native.cancelRequest(cancel);
            }
        }
    }

    /** Generates after the session's tokens from prompt ids; callback may be null. */
    public GenerateResult generate(int[] prompt, GenerateOptions o, TokenCallback callback, Tokenizer tokenizer) {
        return run(prompt, null, o, callback, tokenizer);
    }

    /** Generates from text (tokenized with special tokens) and streams the text of each token to callback. */
    public GenerateResult generate(String prompt, GenerateOptions o, TokenCallback callback, Tokenizer tokenizer) {
        if (tokenizer == null) {
            throw new IllegalArgumentException("a text prompt needs a tokenizer");
        }
        return run(null, Vkformer.utf8(prompt), o, callback, tokenizer);
    }

    private GenerateResult run(int[] prompt, byte[] text, GenerateOptions o, TokenCallback callback,
                               Tokenizer tokenizer) {
        if (o == null) {
            o = new GenerateOptions();
        }
        TokenSink sink = new TokenSink(callback, o.logprobs);
        lockForUse("generate");
        try {
            long h = acquire();
            try {
                long t = tokenizer == null ? 0 : tokenizer.acquire();
                try {
                    // Only close() frees the cancel flag, and it waits for this call (the handle's lock).
                    return Native.generate(h, prompt, text, t, o, sink, cancel);
                } finally {
                    if (tokenizer != null) {
                        tokenizer.release();
                    }
                }
            } finally {
                synchronized (cancelLock) {
                    Native.cancelReset(cancel);
                }
                release();
            }
        } finally {
            busy.unlock();
        }
    }

    /** Forgets the sequence: the next generation starts at position 0. */
    public void reset() {
        lockForUse("reset");
        try {
            long h = acquire();
            try {
                Native.sessionReset(h);
            } finally {
                release();
            }
        } finally {
            busy.unlock();
        }
    }

    /**
     * The sequence's state: its tokens and KV cache, for loadState in a session of the same model
     * and KV format, in this process or another (docs/API.md "Sequence state"). After a
     * generation, pass its last token first in the next prompt, as in one session.
     */
    public byte[] saveState() {
        return withHandle("saveState", h -> Native.sessionSaveState(h));
    }

    /**
     * Replaces the sequence by a saved one. A state of another model or KV format, truncated,
     * corrupted or of a newer version throws VkformerException (VKF_ERROR_MODEL) naming what
     * differs, and the session is left as it was.
     */
    public void loadState(byte[] state) {
        withHandle("loadState", h -> {
            Native.sessionLoadState(h, state);
            return null;
        });
    }

    /** saveState to a file (written whole, then renamed over it). */
    public void saveState(String path) {
        withHandle("saveState", h -> {
            Native.sessionStateFile(h, Vkformer.utf8(path), true);
            return null;
        });
    }

    /** loadState from a file. */
    public void loadState(String path) {
        withHandle("loadState", h -> {
            Native.sessionStateFile(h, Vkformer.utf8(path), false);
            return null;
        });
    }

    private interface HandleCall<T> {
        T run(long handle);
    }

    private <T> T withHandle(String call, HandleCall<T> body) {
        lockForUse(call);
        try {
            long h = acquire();
            try {
                return body.run(h);
            } finally {
                release();
            }
        } finally {
            busy.unlock();
        }
    }

    /** Tokens in the KV cache. */
    public int position() {
        // From the token callback too: a read, with the generation's busy lock held already.
        boolean inCallback = busy.isHeldByCurrentThread();
        if (!inCallback) {
            lockForUse("position");
        }
        try {
            long h = acquire();
            try {
                return Native.sessionPosition(h);
            } finally {
                release();
            }
        } finally {
            if (!inCallback) {
                busy.unlock();
            }
        }
    }

    private void lockForUse(String call) {
        // The lock is reentrant: its holder would otherwise get in from its own token callback
        // and run a generation inside the one under way, changing its tokens.
        if (busy.isHeldByCurrentThread()) {
            throw new IllegalStateException(call + " from this Session's own token callback: only position(), "
                                            + "cancel() and close() may be called there");
        }
        if (!busy.tryLock()) {
            throw new IllegalStateException("this Session is in use by another thread (one thread at a time)");
        }
    }

    @Override
    void beforeClose() {
        cancel();
    }

    @Override
    void afterFree() {
        synchronized (cancelLock) {
            if (cancel != 0) {
                cancel = 0;
                cancelCleanable.clean();
            }
        }
    }
}
