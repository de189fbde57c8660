package org.vkformer;

/**
 * Receives each generated token on the generating thread, with the text that became complete
 * with it (whole UTF-8 characters; often "" while a character is split over tokens).
 * An exception thrown here stops the generation and comes out of Session.generate.
 */
@FunctionalInterface
public interface TokenCallback {
    /**
     * @param token the token id, or -1 for the final call carrying bytes held back at the end
     *     (an incomplete character, as U+FFFD), whose return value is ignored
     * @return true to go on, false to stop after this token (StopReason.CALLBACK)
     */
    boolean onToken(int token, String text);
}
