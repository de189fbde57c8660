package org.vkformer;

/** vkf_generate_result, with the generated ids. */
public final class GenerateResult {
    public final int promptTokens;
    public final int[] tokens;
    public final StopReason stop;
    public final double prefillSeconds, decodeSeconds;

    GenerateResult(double[] r, int[] tokens) {
        promptTokens = (int) r[0];
        this.tokens = tokens;
        stop = StopReason.of((int) r[2]);
        prefillSeconds = r[3];
        decodeSeconds = r[4];
    }
}
