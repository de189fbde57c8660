package org.vkformer;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * What the glue's token callbacks call: keeps the ids (and their logprobs, when asked for) and
 * hands text to the user's callback.
 */
final class TokenSink {
    private final TokenCallback callback;
    private int[] tokens = new int[64];
    private int count;
    private final List<TokenLogprobs> logprobs; // null: not asked for

    TokenSink(TokenCallback callback, boolean withLogprobs) {
        this.callback = callback;
        this.logprobs = withLogprobs ? new ArrayList<>() : null;
    }

    /** Called by the native glue before accept() for the same token (vkf_logprobs_fn). */
    void acceptLogprobs(int token, double logprob, int[] topTokens, double[] topLogprobs) {
        logprobs.add(new TokenLogprobs(token, logprob, topTokens, topLogprobs));
    }

    /** Null when GenerateOptions.logprobs was off. */
    TokenLogprobs[] logprobs() {
        return logprobs == null ? null : logprobs.toArray(new TokenLogprobs[0]);
    }

    /** Called by the native glue on the generating thread; text is null without a tokenizer. */
    boolean accept(int token, byte[] text) {
        if (token != -1) {
            if (count == tokens.length) {
                tokens = Arrays.copyOf(tokens, count * 2);
            }
            tokens[count++] = token;
        }
        if (callback == null) {
            return true;
        }
        return callback.onToken(token, text == null ? "" : new String(text, StandardCharsets.UTF_8));
    }

    int[] tokens() {
        return Arrays.copyOf(tokens, count);
    }
}
