package org.vkformer;

import java.nio.charset.StandardCharsets;

/**
 * A failed vkformer call: the C API's status (vkf_status) and the message vkf_last_error() gave,
 * which says what the library refused and why.
 */
public class VkformerException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** VKF_ERROR_INVALID_ARGUMENT: a value out of range (the message names it). */
    public static final int INVALID_ARGUMENT = 1;
    /** VKF_ERROR_INVALID_HANDLE: a closed handle. */
    public static final int INVALID_HANDLE = 2;
    /** VKF_ERROR_IO: a file or directory that cannot be read. */
    public static final int IO = 4;
    /** VKF_ERROR_OUT_OF_MEMORY: device or host memory; a model too big for the device. */
    public static final int OUT_OF_MEMORY = 6;
    /** VKF_ERROR_CANCELLED. */
    public static final int CANCELLED = 8;
    /**
     * VKF_ERROR_BUSY: a session, batch or encoder already in a call (from its own callback, or on
     * another thread). The Session class refuses that itself, with IllegalStateException.
     */
    public static final int BUSY = 12;

    private final int status;
    private final String statusName;

    /** The native glue's: names and messages as UTF-8 (JNI strings are modified UTF-8). */
    VkformerException(int status, byte[] statusName, byte[] message) {
        this(status, new String(statusName, StandardCharsets.UTF_8), new String(message, StandardCharsets.UTF_8));
    }

    public VkformerException(int status, String statusName, String message) {
        super(statusName + ": " + message);
        this.status = status;
        this.statusName = statusName;
    }

    /** The vkf_status value (VKF_ERROR_*). */
    public int status() {
        return status;
    }

    /** "VKF_ERROR_IO", ... (vkf_status_name). */
    public String statusName() {
        return statusName;
    }
}
