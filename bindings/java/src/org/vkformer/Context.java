package org.vkformer;

import java.nio.charset.StandardCharsets;

/**
 * A Vulkan device opened for vkformer (vkf_context). Thread-safe. Closing it while models
 * are open is allowed: the library keeps it alive until they are closed too.
 */
public final class Context extends NativeHandle {
    /** vkf_context_params: null/-1 fields keep the library's defaults (and its environment variables). */
    public static final class Options {
        /** -1: VKF_DEVICE, else the best device. */
        public int deviceIndex = -1;
        /** A substring of the device's name; null: by deviceIndex. */
        public String deviceName;
        /** -1: VKF_VALIDATION, 0 off, 1 the Khronos validation layer. */
        public int validation = -1;
        /** Forced smaller limits in VKF_LIMITS syntax ("phone", "device_heap=64M"); null: none. */
        public String limits;
        /** null: the default directory; "": no pipeline cache on disk (Android: pass getCacheDir()). */
        public String pipelineCacheDir;
    }

    public Context() {
        this(new Options());
    }

    public Context(Options o) {
        super("Context",
              Native.contextCreate(o.deviceIndex, Vkformer.utf8(o.deviceName), o.validation, Vkformer.utf8(o.limits),
                                   Vkformer.utf8(o.pipelineCacheDir)),
              Native::contextFree);
    }

    /** The device's name. */
    public String deviceName() {
        long h = acquire();
        try {
            return new String(Native.contextDeviceName(h), StandardCharsets.UTF_8);
        } finally {
            release();
        }
    }

    /** Bytes the context's buffers can still get. */
    public long memoryAvailable() {
        long h = acquire();
        try {
            return Native.contextMemoryAvailable(h);
        } finally {
            release();
        }
    }
}
