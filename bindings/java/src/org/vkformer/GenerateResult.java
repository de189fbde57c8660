package org.vkformer;

/** vkf_generate_result, with the generated ids. */
public final class GenerateResult {
    public final int promptTokens;
    /**
     * Of promptTokens, those taken from the session's prefix cache (Session.Options.prefixCache)
     * instead of computed; 0 for a generation that continues the session's sequence.
     */
    public final int cachedTokens;
    public final int[] tokens;
    public final StopReason stop;
    public final double prefillSeconds, decodeSeconds;
    /** Each generated token's logprobs (GenerateOptions.logprobs), one per id of tokens; null when off. */
    public final TokenLogprobs[] logprobs;

    /** Made by the native glue when vkf_generate returns (vkf_generate_result's fields). */
    GenerateResult(int promptTokens, int cachedTokens, int stop, double prefillSeconds, double decodeSeconds,
                   TokenSink sink) {
        this.promptTokens = promptTokens;
        this.cachedTokens = cachedTokens;
        this.tokens = sink.tokens();
        this.logprobs = sink.logprobs();
        this.stop = StopReason.of(stop);
        this.prefillSeconds = prefillSeconds;
        this.decodeSeconds = decodeSeconds;
    }
}
