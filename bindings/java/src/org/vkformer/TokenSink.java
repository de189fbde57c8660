package org.vkformer;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/** What the glue's token callback calls: keeps the ids and hands text to the user's callback. */
final class TokenSink {
    private final TokenCallback callback;
    private int[] tokens = new int[64];
    private int count;

    TokenSink(TokenCallback callback) {
        this.callback = callback;
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
