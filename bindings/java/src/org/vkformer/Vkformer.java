package org.vkformer;

import java.nio.charset.StandardCharsets;

/** The library's version. Loading any org.vkformer class loads libvkformer_jni (and through it libvkformer). */
public final class Vkformer {
    private Vkformer() {}

    /** "0.1.0 (git abc1234)". */
    public static String version() {
        return new String(Native.versionString(), StandardCharsets.UTF_8);
    }

    /** The SONAME number of the libvkformer the glue runs on. */
    public static int abiVersion() {
        return Native.abiVersion();
    }

    static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }
}
