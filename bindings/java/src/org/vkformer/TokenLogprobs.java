package org.vkformer;

/**
 * One generated token's log-probability and its most likely alternatives' (vkf_logprob): log_softmax
 * of the model's raw logits for the position, before logit bias, penalties, truncation and
 * temperature (docs/API.md "Log-probabilities").
 */
public final class TokenLogprobs {
    /** The generated id and its log-probability (<= 0). */
    public final int token;
    public final double logprob;
    /** The GenerateOptions.topLogprobs most likely ids, most likely first (ties: lower id first). */
    public final int[] topTokens;
    public final double[] topLogprobs;

    TokenLogprobs(int token, double logprob, int[] topTokens, double[] topLogprobs) {
        this.token = token;
        this.logprob = logprob;
        this.topTokens = topTokens;
        this.topLogprobs = topLogprobs;
    }
}
