package org.vkformer;

/** vkf_generate_params and vkf_sampling_params. */
public final class GenerateOptions {
    public int maxNewTokens = 32;
    /** 0: greedy. */
    public float temperature = 0f;
    /** 0: off. */
    public int topK = 0;
    /** 1: off. */
    public float topP = 1f;
    public long seed = 0;
    /** The rest of the sampler chain (docs/API.md "The sampler chain"): 0: off. */
    public float minP = 0f;
    /** 1: off. */
    public float typicalP = 1f;
    /** 1: off. */
    public float repetitionPenalty = 1f;
    public float presencePenalty = 0f;
    public float frequencyPenalty = 0f;
    /** The penalties' window: the last N tokens, prompt included. */
    public int penaltyLastN = 64;
    /** logit_bias: logitBiasValues[i] is added to token logitBiasIds[i]'s logit (same lengths). */
    public int[] logitBiasIds = new int[0];
    public float[] logitBiasValues = new float[0];
    /** Generation stops after one of these ids (plus the model's EOS ids when useModelEos). */
    public int[] stopIds = new int[0];
    public boolean useModelEos = true;
    /** GenerateResult.logprobs for each generated token (vkf_generate_params.on_logprobs). */
    public boolean logprobs = false;
    /** With logprobs: the most likely alternatives each carries, at most the vocabulary size. */
    public int topLogprobs = 0;

    public GenerateOptions maxNewTokens(int n) {
        maxNewTokens = n;
        return this;
    }
}
