package org.vkformer;

/** vkf_generate_result, with the generated ids. */
public final class GenerateResult {
    public final int promptTokens;
    public final int[] tokens;
    public final StopReason stop;
    public final double prefillSeconds, decodeSeconds;

    /** Made by the native glue when vkf_generate returns (vkf_generate_result's fields). */
    GenerateResult(int promptTokens, int stop, double prefillSeconds, double decodeSeconds, TokenSink sink) {
        this.promptTokens = promptTokens;
        this.tokens = sink.tokens();
        this.stop = StopReason.of(stop);
        this.prefillSeconds = prefillSeconds;
        this.decodeSeconds = decodeSeconds;
    }
}
