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
    /** Generation stops after one of these ids (plus the model's EOS ids when useModelEos). */
    public int[] stopIds = new int[0];
    public boolean useModelEos = true;

    public GenerateOptions maxNewTokens(int n) {
        maxNewTokens = n;
        return this;
    }
}
