package org.vkformer;

/** Why a generation ended (vkf_stop_reason). */
public enum StopReason {
    LENGTH, EOS, CALLBACK, CANCELLED, CACHE_FULL, GRAMMAR;

    static StopReason of(int value) {
        StopReason[] all = values();
        return value >= 0 && value < all.length ? all[value] : LENGTH;
    }
}
