package org.vkformer;

/**
 * The storage of K or V in a session's KV cache (vkf_kv_format): fp16, or quantized in blocks
 * of 32 along the head (docs/QUANTIZATION.md, "KV cache": about 0.53x and 0.28x the memory of
 * fp16, for head sizes of 32n).
 */
public enum KvFormat {
    F16(0),
    Q8_0(1),
    Q4_0(2);

    final int code;

    KvFormat(int code) {
        this.code = code;
    }
}
