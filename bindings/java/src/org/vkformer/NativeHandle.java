package org.vkformer;

import java.lang.ref.Cleaner;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.LongConsumer;

/**
 * One C handle. Calls hold the read lock, close() the write lock: closing waits for calls in
 * flight on other threads instead of freeing what they use, and a call after close() throws
 * VkformerException (VKF_ERROR_INVALID_HANDLE) in Java, before reaching the library. close()
 * from inside a call on this handle (a token callback) cannot wait for that call: it is
 * deferred to the call's end. A handle that becomes unreachable unclosed is freed by a Cleaner.
 */
abstract class NativeHandle implements AutoCloseable {
    private static final Cleaner CLEANER = Cleaner.create();

    /**
     * Frees one C handle: on close(), or on the Cleaner's thread once its owner is unreachable
     * (then no call can be in flight). Holds no reference to the owner, which would keep it
     * reachable for ever.
     */
    private static final class Freer implements Runnable {
        private final long handle;
        private final LongConsumer free;

        Freer(long handle, LongConsumer free) {
            this.handle = handle;
            this.free = free;
        }

        @Override
        public void run() {
            free.accept(handle);
        }
    }

    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private final String kind;
    private long handle;
    private final Cleaner.Cleanable cleanable;
    // Set by close() from inside a call on this handle: the last call to end frees it.
    private volatile boolean closeRequested;

    /** @param free the C function freeing `handle`: a static method, not one of this object */
    NativeHandle(String kind, long handle, LongConsumer free) {
        this.kind = kind;
        this.handle = handle;
        this.cleanable = register(this, handle, free);
    }

    /** Frees `handle` with `free` once `owner` is unreachable, or when clean() is called (at most once). */
    static Cleaner.Cleanable register(Object owner, long handle, LongConsumer free) {
        return CLEANER.register(owner, new Freer(handle, free));
    }

    /** The handle for a call; the caller must call release() in a finally block. */
    final long acquire() {
        lock.readLock().lock();
        if (handle == 0 || closeRequested) {
            release();
            throw new VkformerException(VkformerException.INVALID_HANDLE, "VKF_ERROR_INVALID_HANDLE",
                                        "this " + kind + " was closed");
        }
        return handle;
    }

    final void release() {
        lock.readLock().unlock();
        // The last call of those a deferred close() waited for frees the handle; tryLock
        // fails while another call still holds the read lock, whose release() does it.
        if (closeRequested && lock.getReadHoldCount() == 0 && lock.writeLock().tryLock()) {
            try {
                freeNow();
            } finally {
                lock.writeLock().unlock();
            }
        }
    }

    /** Called before closing: a session cancels its generation. */
    void beforeClose() {}

    /** After the C handle was freed (with the write lock held): a session frees its cancel flag. */
    void afterFree() {}

    @Override
    public void close() {
        beforeClose();
        if (lock.getReadHoldCount() > 0) {
            // This thread is inside a call on this handle (its token callback): waiting for the
            // write lock would wait for itself.
            closeRequested = true;
            return;
        }
        lock.writeLock().lock();
        try {
            freeNow();
        } finally {
            lock.writeLock().unlock();
        }
    }

    private void freeNow() {
        if (handle != 0) {
            handle = 0;
            cleanable.clean();
            afterFree();
        }
    }

    final boolean isClosed() {
        lock.readLock().lock();
        try {
            return handle == 0 || closeRequested;
        } finally {
            lock.readLock().unlock();
        }
    }
}
