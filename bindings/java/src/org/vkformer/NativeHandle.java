package org.vkformer;

import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * One C handle. Calls hold the read lock, close() the write lock: closing waits for calls in
 * flight on other threads instead of freeing what they use, and a call after close() throws
 * VkformerException (VKF_ERROR_INVALID_HANDLE) in Java, before reaching the library.
 */
abstract class NativeHandle implements AutoCloseable {
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private final String kind;
    private long handle;

    NativeHandle(String kind, long handle) {
        this.kind = kind;
        this.handle = handle;
    }

    /** The handle for a call; the caller must call release() in a finally block. */
    final long acquire() {
        lock.readLock().lock();
        if (handle == 0) {
            lock.readLock().unlock();
            throw new VkformerException(VkformerException.INVALID_HANDLE, "VKF_ERROR_INVALID_HANDLE",
                                        "this " + kind + " was closed");
        }
        return handle;
    }

    final void release() {
        lock.readLock().unlock();
    }

    /** Frees the C handle (the library keeps what children still use alive). */
    abstract void free(long handle);

    /** Called before waiting for calls in flight: a session cancels its generation. */
    void beforeClose() {}

    @Override
    public void close() {
        beforeClose();
        lock.writeLock().lock();
        try {
            if (handle != 0) {
                long h = handle;
                handle = 0;
                free(h);
            }
        } finally {
            lock.writeLock().unlock();
        }
    }

    final boolean isClosed() {
        lock.readLock().lock();
        try {
            return handle == 0;
        } finally {
            lock.readLock().unlock();
        }
    }
}
